/**
 * `lintel-edge action`: commands reach a configured thermostat through its driver's binding (the path and
 * field names of firmware-bindings/devices), and every failure says why with a non-zero exit.
 */
import t, { type Test } from 'tap';
import { createServer, type IncomingMessage } from 'node:http';
import { closeServer, listen } from '../../../shared/lifecycle.js';
import { main } from '../../../edge/src/commands/main.js';
import { startFakeDevice } from '../../support/fake-device.js';
import { actionConfig } from '../support/action-config.js';

interface Call {
  method: string;
  url: string;
  body: unknown;
}

/** A thermostat with the ecobee-like local API: answers its bound paths, fails loudly on anything else. */
async function fakeThermostat(t: Test) {
  const calls: Call[] = [];
  const unexpected: string[] = [];
  let status = 200;
  const server = createServer((req: IncomingMessage, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const known = ['/api/v1/thermostat/hold', '/api/v1/thermostat/setpoint/up', '/api/v1/thermostat/setpoint/down'];
      if (req.method !== 'POST' || !known.includes(req.url ?? '')) {
        unexpected.push(`${req.method} ${req.url}`);
        res.writeHead(500).end();
        return;
      }
      calls.push({ method: req.method, url: req.url!, body: JSON.parse(text) });
      res.writeHead(status, { 'content-type': 'application/json' }).end(status === 200 ? '{"ok":true}' : '{"error":"device says no: 3c:22:fb:01:02:03"}');
    });
  });
  const port = await listen(server, 0, '127.0.0.1');
  t.teardown(() => closeServer(server));
  return { url: `http://127.0.0.1:${port}`, calls, unexpected, fail: () => (status = 503) };
}

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (s: string) => void out.push(s), err: (s: string) => void err.push(s) } };
}

t.test('actions drive a configured thermostat locally', async (t) => {
  const device = await fakeThermostat(t);
  const config = actionConfig(t, { sensorId: 'stat-lobby', driver: 'ecobee-local-thermostat', endpoint: device.url });

  const list = io();
  t.equal(await main(['action', '--config', config, '--list'], list.io), 0);
  t.match(list.out.join(''), /stat-lobby {2}temperature in lobby {2}driver ecobee-local-thermostat {2}actions: setTarget\(target\) increase\(step\?\) decrease\(step\?\)/);

  const set = io();
  t.equal(await main(['action', '--config', config, '--sensor', 'stat-lobby', '--action', 'setTarget', '--arg', 'target=21.5'], set.io), 0);
  t.match(set.out.join(''), /^accepted: setTarget on stat-lobby \(temperature in lobby\)/);
  t.same(device.calls, [{ method: 'POST', url: '/api/v1/thermostat/hold', body: { holdTemp: 21.5 } }], 'the argument renamed to the device field');

  const up = io();
  t.equal(await main(['action', '--config', config, '--sensor', 'stat-lobby', '--action', 'increase'], up.io), 0);
  t.same(device.calls[1], { method: 'POST', url: '/api/v1/thermostat/setpoint/up', body: {} }, 'no step: an empty body');

  const cases: Array<[string[], number, RegExp]> = [
    // what the command names is not there, or its arguments do not fit: bad usage, 2
    [['--sensor', 'stat-lobby', '--action', 'setTarget', '--arg', 'target=hot'], 2, /invalid_arguments: invalid action arguments\n {2}target: expected a finite number, got "hot"/],
    [['--sensor', 'stat-lobby', '--action', 'fly'], 2, /unknown_action: metric temperature declares no action "fly"/],
    [['--sensor', 'stat-attic', '--action', 'setTarget', '--arg', 'target=20'], 2, /no_sensor: no sensor "stat-attic" in this gateway's config \(have: stat-lobby\)/],
    [['--sensor', 'stat-lobby', '--action', 'setTarget', '--arg', 'target'], 2, /--arg: expected name=value, got "target"/],
    [['--sensor', 'stat-lobby'], 2, /action needs --sensor <id> and --action <name>/],
  ];
  for (const [args, code, message] of cases) {
    const run = io();
    t.equal(await main(['action', '--config', config, ...args], run.io), code, args.join(' '));
    t.match(run.err.join(''), message);
  }
  t.equal(device.calls.length, 2, 'refused commands never reached the device');

  device.fail();
  const rejected = io();
  t.equal(await main(['action', '--config', config, '--sensor', 'stat-lobby', '--action', 'decrease', '--arg', 'step=1'], rejected.io), 1);
  t.match(rejected.err.join(''), /device_rejected: the device did not accept the command/);
  t.notOk(rejected.err.join('').includes('3c:22'), "the device's own body is not passed on");
  t.same(device.unexpected, []);
});

t.test('a sensor with an unknown driver is a config error', async (t) => {
  const config = actionConfig(t, { sensorId: 's1', driver: 'nest-cloud', endpoint: 'http://127.0.0.1:1' });
  const run = io();
  t.equal(await main(['action', '--config', config, '--list'], run.io), 2);
  t.match(run.err.join(''), /sensors\[0\]\.driver: expected one of ecobee-local-thermostat, .*, got "nest-cloud"/);
});

t.test('an argument given without --arg is refused, not dropped: nothing is sent', async (t) => {
  // Set up for no call: a command that reached it would fail the test at teardown.
  const device = await startFakeDevice(t);
  const config = actionConfig(t, { sensorId: 'stat-lobby', driver: 'ecobee-local-thermostat', endpoint: device.url });
  const run = io();
  t.equal(await main(['action', '--config', config, '--sensor', 'stat-lobby', '--action', 'increase', 'step=3'], run.io), 2);
  t.match(run.err.join(''), /unexpected argument "step=3"/);
  t.same(device.calls, []);
});
