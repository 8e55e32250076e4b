import t, { type Test } from 'tap';
import { parseRegistration } from '../../../cloud/telemetry/domain/registration.js';
import { callAs, startHarness, type Harness } from './support/harness.js';
import { startFakeDevice, type FakeDevice } from '../../support/fake-device.js';

const manager = { sub: 'u-fm', accountName: 'fm@acme.test', memberships: [{ domainName: 'acme', role: 'facility_manager' }] };
const viewer = { sub: 'u-v', accountName: 'v@acme.test', memberships: [{ domainName: 'acme', role: 'viewer' }] };
const outsider = { sub: 'u-o', accountName: 'o@else.test', memberships: [{ domainName: 'else', role: 'business_admin' }] };

/**
 * A device address where nothing listens: port 9 (discard), which no test binds. A port freed for the
 * purpose could be taken by another test meanwhile, and the command would reach it.
 */
const DEAD_ENDPOINT = 'http://127.0.0.1:9';

async function register(h: Harness, sensors: Array<{ sensorId: string; roomId: string; driver: string; endpoint: string; metric?: string }>) {
  const parsed = parseRegistration({ buildingId: 'b1', rooms: ['r1'], sensors: sensors.map((s) => ({ metric: 'temperature', ...s })) });
  if (!parsed.ok) throw new Error(parsed.errors.join('; '));
  await h.buildings.applyRegistration(parsed.value);
}

async function setup(t: Test): Promise<{ h: Harness; ok: FakeDevice; failing: FakeDevice }> {
  const h = await startHarness(t);
  h.directory.set('b1', ['acme']);
  const ok = await startFakeDevice(t);
  const failing = await startFakeDevice(t);
  await register(h, [
    { sensorId: 'stat-ok', roomId: 'r1', driver: 'ecobee-local-thermostat', endpoint: ok.url },
    { sensorId: 'stat-zigbee', roomId: 'r1', driver: 'zigbee-rest-thermostat', endpoint: `${ok.url}/api/devices/0x00158d` },
    { sensorId: 'stat-500', roomId: 'r1', driver: 'ecobee-local-thermostat', endpoint: failing.url },
    { sensorId: 'stat-dead', roomId: 'r1', driver: 'honeywell-lcc-thermostat', endpoint: DEAD_ENDPOINT },
    { sensorId: 'people-1', roomId: 'r1', driver: 'ecobee-local-thermostat', endpoint: ok.url, metric: 'peopleCount' },
    { sensorId: 'stat-r2', roomId: 'r2', driver: 'ecobee-local-thermostat', endpoint: ok.url },
  ]);
  return { h, ok, failing };
}

const act = (sensorId: string, action = 'setTarget', args: Record<string, unknown> = { target: 21.5 }) => ({
  metric: 'temperature',
  buildingId: 'b1',
  roomId: 'r1',
  sensorId,
  action,
  arguments: args,
});

t.test('the sensor listing shows each sensor with its capability and never its endpoint', async (t) => {
  const { h, ok } = await setup(t);
  const answer = await callAs(h, viewer, 'GET', '/sensors/buildings/b1/rooms/r1');
  t.equal(answer.status, 200);
  const body = answer.json as { sensors: Array<{ sensorId: string; capability: string[]; actions: Array<{ name: string }> }> };
  t.same(
    body.sensors.map((s) => [s.sensorId, s.capability]),
    [
      ['people-1', []],
      ['stat-500', ['setTarget', 'increase', 'decrease']],
      ['stat-dead', ['setTarget']],
      ['stat-ok', ['setTarget', 'increase', 'decrease']],
      ['stat-zigbee', ['setTarget', 'increase', 'decrease']],
    ],
  );
  t.same(body.sensors[2]?.actions, [{ name: 'setTarget', label: 'Set target temperature', parameters: [{ name: 'target', kind: 'Finite', required: true }] }]);
  t.notMatch(answer.text, /127\.0\.0\.1|endpoint/, 'device addresses stay inside');
  t.same((await callAs(h, viewer, 'GET', '/sensors/buildings/b1/rooms/empty')).json, { buildingId: 'b1', roomId: 'empty', sensors: [] });
  t.equal((await callAs(h, outsider, 'GET', '/sensors/buildings/b1/rooms/r1')).status, 403, 'not a member of the building domains');
  t.same(ok.unexpected, []);
});

t.test('a command reaches the device as the binding says, and answers 200 {accepted: true}', async (t) => {
  const { h, ok } = await setup(t);
  ok.on('POST', '/api/v1/thermostat/hold', 200, '{"status":"queued"}');
  ok.on('POST', '/api/v1/thermostat/setpoint/down', 202);
  ok.on('PUT', '/api/devices/0x00158d/set', 204, '');

  const set = await callAs(h, manager, 'POST', '/executeAction', act('stat-ok'));
  t.equal(set.status, 200);
  t.same(set.json, { accepted: true }, 'the device body is not forwarded');
  const down = await callAs(h, manager, 'POST', '/executeAction', act('stat-ok', 'decrease', {}));
  t.same(down.json, { accepted: true });
  const snake = await callAs(h, manager, 'POST', '/executeAction', { metric: 'temperature', building_id: 'b1', room_id: 'r1', sensor_id: 'stat-zigbee', action: 'setTarget', arguments: { target: 19 } });
  t.equal(snake.status, 200, 'the seed snake_case command fields are accepted');
  t.same(ok.calls, [
    { method: 'POST', path: '/api/v1/thermostat/hold', contentType: 'application/json', body: { holdTemp: 21.5 } },
    { method: 'POST', path: '/api/v1/thermostat/setpoint/down', contentType: 'application/json', body: {} },
    { method: 'PUT', path: '/api/devices/0x00158d/set', contentType: 'application/json', body: { occupied_heating_setpoint: 19 } },
  ]);
  t.same(ok.unexpected, []);
});

t.test('a device answering 500, or nothing listening, is 502 without the device status', async (t) => {
  const { h, failing } = await setup(t);
  failing.on('POST', '/api/v1/thermostat/hold', 500, '{"error":"compressor lockout","code":"E42"}');
  const rejected = await callAs(h, manager, 'POST', '/executeAction', act('stat-500'));
  t.equal(rejected.status, 502);
  t.same(rejected.json, { type: 'Bad Gateway', message: 'the device did not accept the command' });
  t.equal(failing.calls.length, 1, 'it did reach the device');
  const unreachable = await callAs(h, manager, 'POST', '/executeAction', act('stat-dead'));
  t.equal(unreachable.status, 502);
  t.same(unreachable.json, { type: 'Bad Gateway', message: 'the device could not be reached' });
  const metric = await h.metrics.actions.get();
  t.same(metric.values.filter((v) => v.value > 0).map((v) => [v.labels.outcome, v.value]).sort(), [['device_rejected', 1], ['device_unreachable', 1]]);
});

t.test('the order of checks: 401, 403, 404, 400, 404, 500', async (t) => {
  const { h, ok } = await setup(t);
  h.directory.set('b-nodomain', []);
  const noClaims = await fetch(`${h.url}/executeAction`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(act('stat-ok')) });
  t.equal(noClaims.status, 401);
  await noClaims.body?.cancel();
  t.equal((await callAs(h, viewer, 'POST', '/executeAction', act('stat-ok'))).status, 403, 'a viewer cannot run actions');
  t.equal((await callAs(h, outsider, 'POST', '/executeAction', act('stat-ok'))).status, 403, 'a manager of another domain');
  t.equal((await callAs(h, manager, 'POST', '/executeAction', { ...act('stat-ok'), buildingId: 'b-nodomain' })).status, 403, 'a building in no domain');
  t.equal((await callAs(h, viewer, 'POST', '/executeAction', { ...act('stat-ok'), metric: 'radiation' })).status, 403, 'the edit check comes before the metric check');
  t.equal((await callAs(h, viewer, 'POST', '/executeAction', { ...act('stat-ok'), arguments: 'warm' })).status, 403, 'and before the arguments check');
  const unknownMetric = await callAs(h, manager, 'POST', '/executeAction', { ...act('stat-ok'), metric: 'radiation' });
  t.equal(unknownMetric.status, 404);
  t.same((await callAs(h, manager, 'POST', '/executeAction', act('stat-ok', 'fly'))).status, 404, 'an action the metric does not declare');
  t.equal((await callAs(h, manager, 'POST', '/executeAction', { ...act('stat-ok'), metric: 'radiation', arguments: 'warm' })).status, 404, 'the metric check comes before the arguments check');
  const notAnObject = await callAs(h, manager, 'POST', '/executeAction', { ...act('stat-ok'), arguments: 'warm' });
  t.equal(notAnObject.status, 400, 'arguments that are not an object, for a caller who may edit and a known action');
  t.same(notAnObject.json, { errors: [{ field: 'arguments', message: 'expected an object of named arguments, got "warm"' }], type: 'Validation Error', message: 'arguments must be an object' });
  const badArgs = await callAs(h, manager, 'POST', '/executeAction', act('stat-ok', 'setTarget', { target: 'warm' }));
  t.equal(badArgs.status, 400);
  t.same(badArgs.json, { errors: [{ field: 'target', message: 'expected a finite number, got "warm"' }], type: 'Validation Error', message: 'invalid action arguments' });
  t.equal((await callAs(h, manager, 'POST', '/executeAction', act('stat-ok', 'setTarget', {}))).status, 400, 'a missing required parameter');
  t.equal((await callAs(h, manager, 'POST', '/executeAction', act('missing'))).status, 404, 'no such sensor');
  t.equal((await callAs(h, manager, 'POST', '/executeAction', act('stat-r2'))).status, 404, 'the sensor is in another room');
  t.equal((await callAs(h, manager, 'POST', '/executeAction', act('people-1', 'setTarget'))).status, 404, 'a sensor of another metric');
  const noBinding = await callAs(h, manager, 'POST', '/executeAction', act('stat-dead', 'increase', { step: 1 }));
  t.equal(noBinding.status, 404, 'the driver binds no increase');
  t.match(noBinding.json, { message: /has no binding for increase/ });

  // A sensor row with a non-http scheme (registration refuses these; a row from an older version may not be).
  await h.pool.query(`INSERT INTO sensors (building_id, sensor_id, room_id, metric, driver, endpoint) VALUES ('b1', 'stat-file', 'r1', 'temperature', 'ecobee-local-thermostat', 'file:///etc/passwd')`);
  const scheme = await callAs(h, manager, 'POST', '/executeAction', act('stat-file'));
  t.equal(scheme.status, 500);
  t.same(scheme.json, { type: 'Internal Server Error', message: 'the device command could not be sent' }, 'deliberately vague');
  t.same(ok.calls, [], 'no failed check sent anything to a device');
  t.same(ok.unexpected, []);
});

t.test('SSRF: the request can never choose where a command goes', async (t) => {
  const { h, ok } = await setup(t);
  const attacker = await startFakeDevice(t);
  const attempts: Array<[string, Record<string, unknown>]> = [
    ['an endpoint field', { ...act('stat-ok'), endpoint: attacker.url }],
    ['a url field', { ...act('stat-ok'), url: `${attacker.url}/x` }],
    ['a host field', { ...act('stat-ok'), host: '127.0.0.1', port: attacker.port }],
    ['a path field', { ...act('stat-ok'), path: '/../../admin' }],
    ['a url among the arguments', act('stat-ok', 'setTarget', { target: 20, url: attacker.url })],
    ['an endpoint among the arguments', act('stat-ok', 'setTarget', { target: 20, endpoint: attacker.url })],
    ['a URL as an argument value', act('stat-ok', 'setTarget', { target: attacker.url })],
    ['a URL as the sensor id', act(attacker.url)],
    ['a path as the sensor id', act('../stat-ok')],
    ['the same key twice, by alias', { ...act('stat-ok'), sensor_id: 'stat-500' }],
  ];
  for (const [what, body] of attempts) {
    const answer = await callAs(h, manager, 'POST', '/executeAction', body);
    t.ok(answer.status === 400 || answer.status === 404, `${what}: refused (${answer.status})`);
  }
  const field = await callAs(h, manager, 'POST', '/executeAction', { ...act('stat-ok'), endpoint: attacker.url });
  t.match(field.json, { errors: [{ field: 'endpoint', message: /never taken from the request/ }] });
  t.same(attacker.calls, [], 'the attacker server was never called');
  t.same(attacker.unexpected, []);
  t.same(ok.calls, [], 'nor the real device, with any of these');
  t.same(ok.unexpected, []);
});

t.test('registration refuses endpoints that are not plain http(s) URLs', async (t) => {
  const bad = parseRegistration({
    buildingId: 'b1',
    sensors: [
      { sensorId: 'a', roomId: 'r1', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint: 'file:///etc/passwd' },
      { sensorId: 'b', roomId: 'r1', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint: 'http://stat.local/?next=http://evil' },
      { sensorId: 'c', roomId: 'r1', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint: 'stat.local' },
    ],
  });
  t.same(bad, {
    ok: false,
    errors: [
      'sensors[0].endpoint: expected an http:// or https:// URL, got a file: URL',
      'sensors[1].endpoint: an endpoint holds no query or fragment',
      'sensors[2].endpoint: expected an absolute http:// or https:// URL',
    ],
  });
});
