/**
 * POST /executeAction checks in the seed's order (002, ExecuteAction step 3, and its error table): the
 * kernel finds the metric and the action before it checks the arguments. An unknown metric or action is
 * 404 whatever the arguments are, arguments that are not an object 400 only for a known action.
 */
import t from 'tap';
import { callAs } from './support/harness.js';
import { startThermostatBuilding } from './support/thermostat-building.js';

const manager = { sub: 'u-fm', accountName: 'fm@acme.test', memberships: [{ domainName: 'acme', role: 'facility_manager' }] };

const command = { metric: 'temperature', buildingId: 'b1', roomId: 'r1', sensorId: 'stat-ok', action: 'setTarget' };

const NOT_OBJECTS: Array<[string, unknown]> = [
  ['a string', 'warm'],
  ['a number', 21.5],
  ['an array', [21.5]],
];

t.test('an unknown metric or action is 404 even when the arguments are not an object', async (t) => {
  const { h, device } = await startThermostatBuilding(t);
  for (const [what, args] of NOT_OBJECTS) {
    const metric = await callAs(h, manager, 'POST', '/executeAction', { ...command, metric: 'radiation', arguments: args });
    t.equal(metric.status, 404, `unknown metric, arguments ${what}`);
    t.same(metric.json, { type: 'Not Found', message: 'unknown metric "radiation"' });
    const action = await callAs(h, manager, 'POST', '/executeAction', { ...command, action: 'fly', arguments: args });
    t.equal(action.status, 404, `unknown action, arguments ${what}`);
    t.same(action.json, { type: 'Not Found', message: 'metric temperature declares no action "fly"' });
  }
  t.same(device.calls, [], 'nothing reached the device');
});

t.test('a known action with arguments that are not an object is 400, naming the arguments', async (t) => {
  const { h, device } = await startThermostatBuilding(t);
  for (const [what, args] of NOT_OBJECTS) {
    const answer = await callAs(h, manager, 'POST', '/executeAction', { ...command, arguments: args });
    t.equal(answer.status, 400, `arguments ${what}`);
    t.match(answer.json, { type: 'Validation Error', message: 'arguments must be an object', errors: [{ field: 'arguments', message: /^expected an object of named arguments, got / }] });
  }
  const metric = await h.metrics.actions.get();
  t.same(metric.values.filter((v) => v.value > 0).map((v) => [v.labels.outcome, v.value]), [['invalid', NOT_OBJECTS.length]]);
  t.same(device.calls, [], 'nothing reached the device');
});
