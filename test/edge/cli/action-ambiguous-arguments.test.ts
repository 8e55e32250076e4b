/**
 * `lintel-edge action` refuses what it would otherwise read in a way the operator may not have meant, with
 * exit 2 and nothing sent: --list given with a command (the command was silently not sent), an argument
 * named twice or an option of one value given twice (the last silently won: `--sensor` drove another
 * thermostat), and a number not written as a plain decimal (0x15 was sent as 21).
 */
import t from 'tap';
import { main } from '../../../edge/src/commands/main.js';
import { startFakeDevice } from '../../support/fake-device.js';
import { actionConfig } from '../support/action-config.js';
import { captureIo } from '../support/cli-io.js';

t.test('ambiguous or conflicting action options exit 2, say why, and send nothing', async (t) => {
  // Set up for no call: a command that reached it would fail the test at teardown.
  const device = await startFakeDevice(t);
  const config = actionConfig(t, { sensorId: 'stat-lobby', driver: 'ecobee-local-thermostat', endpoint: device.url });
  const send = ['--sensor', 'stat-lobby', '--action', 'setTarget'];
  const cases: Array<[string[], RegExp]> = [
    [['--list', ...send, '--arg', 'target=21'], /action --list takes no --sensor, --action, --arg; list, or send a command, not both/],
    [['--list', '--sensor', 'stat-lobby'], /action --list takes no --sensor;/],
    [['--list', '--arg', 'target=21'], /action --list takes no --arg;/],
    [[...send, '--arg', 'target=21', '--arg', 'target=25'], /--arg: "target" is given more than once; give each argument once/],
    [['--sensor', 'stat-lobby', ...send, '--arg', 'target=21'], /--sensor is given more than once; give it once/],
    [[...send, '--action', 'increase', '--arg', 'target=21'], /--action is given more than once; give it once/],
    [['--config', config, ...send, '--arg', 'target=21'], /--config is given more than once; give it once/],
    [[...send, '--arg', 'target=0x15'], /--arg target: expected a number written as a plain decimal \(e\.g\. 21 or -0\.5\), got "0x15"/],
    [[...send, '--arg', 'target=1e3'], /--arg target: expected a number written as a plain decimal .*, got "1e3"/],
    [[...send, '--arg', 'target= 21'], /--arg target: expected a number written as a plain decimal .*, got " 21"/],
    [[...send, '--arg', 'target=021'], /--arg target: expected a number written as a plain decimal .*, got "021"/],
    [[...send, '--arg', 'target=+21'], /--arg target: expected a number written as a plain decimal .*, got "\+21"/],
  ];
  for (const [args, message] of cases) {
    const { out, err, io } = captureIo();
    t.equal(await main(['action', '--config', config, ...args], io), 2, args.join(' '));
    t.match(err.join(''), message, args.join(' '));
    t.equal(out.join(''), '', `${args.join(' ')}: nothing listed or sent`);
  }
  t.same(device.calls, []);
});

t.test('plain decimals are still sent as numbers, and --list alone still lists', async (t) => {
  const device = await startFakeDevice(t);
  const config = actionConfig(t, { sensorId: 'stat-lobby', driver: 'ecobee-local-thermostat', endpoint: device.url });
  const list = captureIo();
  t.equal(await main(['action', '--config', config, '--list'], list.io), 0);
  t.match(list.out.join(''), /^stat-lobby {2}temperature in lobby/);
  t.same(device.calls, []);

  device.on('POST', '/api/v1/thermostat/hold', 200, '{"ok":true}');
  const set = captureIo();
  t.equal(await main(['action', '--config', config, '--sensor', 'stat-lobby', '--action', 'setTarget', '--arg', 'target=21'], set.io), 0, set.err.join(''));
  t.same(device.calls.map((c) => c.body), [{ holdTemp: 21 }], 'sent as the number 21');
});
