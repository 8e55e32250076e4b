/**
 * POST /executeAction with `"arguments": null`: arguments that are not an object, refused with 400
 * (README: "arguments (not an object, or not as the action declares them: 400)"). Only an absent field
 * means no arguments. `null` was once read as none, so `increase` (whose one parameter is optional) sent
 * its command to the device. The seed's order of checks stays: an unknown metric or action is 404 first.
 */
import t from 'tap';
import { callAs } from './support/harness.js';
import { startThermostatBuilding } from './support/thermostat-building.js';

const manager = { sub: 'u-fm', accountName: 'fm@acme.test', memberships: [{ domainName: 'acme', role: 'facility_manager' }] };

const command = { metric: 'temperature', buildingId: 'b1', roomId: 'r1', sensorId: 'stat-ok' };

t.test('"arguments": null is 400 for every action, naming the arguments, and the device receives nothing', async (t) => {
  // The fake device is set up for no route: any command reaching it fails the test at teardown too.
  const { h, device } = await startThermostatBuilding(t);
  for (const action of ['increase', 'decrease', 'setTarget']) {
    const answer = await callAs(h, manager, 'POST', '/executeAction', { ...command, action, arguments: null });
    t.equal(answer.status, 400, `${action} with null arguments`);
    t.same(answer.json, {
      type: 'Validation Error',
      message: 'arguments must be an object',
      errors: [{ field: 'arguments', message: 'expected an object of named arguments, got null' }],
    });
  }
  const metric = await h.metrics.actions.get();
  t.same(metric.values.filter((v) => v.value > 0).map((v) => [v.labels.outcome, v.value]), [['invalid', 3]], 'counted as invalid');
  t.same(device.calls, [], 'nothing reached the device');
  t.same(device.unexpected, [], 'not even a route it was not set up for');
});

t.test('with null arguments, an unknown metric or action is still 404 first', async (t) => {
  const { h, device } = await startThermostatBuilding(t);
  const metric = await callAs(h, manager, 'POST', '/executeAction', { ...command, metric: 'radiation', action: 'increase', arguments: null });
  t.equal(metric.status, 404);
  t.same(metric.json, { type: 'Not Found', message: 'unknown metric "radiation"' });
  const action = await callAs(h, manager, 'POST', '/executeAction', { ...command, action: 'fly', arguments: null });
  t.equal(action.status, 404);
  t.same(action.json, { type: 'Not Found', message: 'metric temperature declares no action "fly"' });
  t.same(device.calls, [], 'nothing reached the device');
});

t.test('absent arguments still mean none: increase without a step reaches the device with an empty body', async (t) => {
  const { h, device } = await startThermostatBuilding(t);
  device.on('POST', '/api/v1/thermostat/setpoint/up', 204, '');
  const answer = await callAs(h, manager, 'POST', '/executeAction', { ...command, action: 'increase' });
  t.equal(answer.status, 200);
  t.same(answer.json, { accepted: true });
  t.same(device.calls, [{ method: 'POST', path: '/api/v1/thermostat/setpoint/up', contentType: 'application/json', body: {} }]);
});
