import t from 'tap';
import { METRICS, metricOf, ALERTABLE_METRICS, COUNT_METRICS, temperature, zoneTransition } from '../../../shared/catalog/metrics.js';
import { validateReading, validateActionArguments, breachesOf, contractOf, declaredView, validateFields } from '../../../shared/catalog/validate.js';

const now = 1_763_000_000_000;

t.test('the catalog declares every metric with the seed shape', async (t) => {
  t.same(Object.keys(METRICS).sort(), ['airQuality', 'apClients', 'peopleCount', 'ratioDeviceCount', 'temperature', 'totalDeviceCount', 'zoneTransition']);
  for (const m of Object.values(METRICS)) {
    t.ok(m.fields.some((f) => f.name === m.value_field), `${m.key}: value_field is a declared field`);
    for (const b of m.bounds) t.ok(m.fields.some((f) => f.name === b.field), `${m.key}.${b.key} bounds a declared field`);
  }
  t.same([...ALERTABLE_METRICS].sort(), ['airQuality', 'peopleCount', 'temperature']);
  t.same([...COUNT_METRICS].sort(), ['apClients', 'peopleCount', 'ratioDeviceCount', 'totalDeviceCount', 'zoneTransition']);
  t.same(temperature.actions.map((a) => a.name), ['setTarget', 'increase', 'decrease']);
  t.same(zoneTransition.bounds, [{ key: 'maxTransitions', field: 'zoneTransition', label: 'Zone transitions', direction: 'Above' }]);
  t.equal(metricOf('constructor'), undefined);
  t.equal(metricOf('zoneTransition')?.interface_name, 'IZoneTransition');
});

t.test('a good reading validates', async (t) => {
  const r = validateReading({ type: 'zoneTransition', buildingId: 'b1', roomId: 'lobby', fromRoomId: 'atrium', timestamp: now, zoneTransition: 3 });
  t.ok(r.ok);
  if (r.ok) t.equal(r.metric.key, 'zoneTransition');
});

t.test('bad readings name every bad field', async (t) => {
  const r = validateReading({ type: 'peopleCount', buildingId: '', roomId: 'r1', timestamp: now, peopleCount: -1, mac: 'aa:bb:cc:dd:ee:ff' });
  t.notOk(r.ok);
  if (!r.ok) {
    t.same(r.errors, [
      { field: 'buildingId', message: 'expected a non-empty string of at most 256 characters, without NUL (\\u0000), other control characters or lone surrogates, got ""' },
      { field: 'peopleCount', message: 'expected a non-negative integer, got -1' },
      { field: 'mac', message: 'not a declared field of this metric' },
    ]);
  }
  const missing = validateReading({ type: 'temperature', buildingId: 'b', roomId: 'r', timestamp: now });
  t.same(!missing.ok && missing.errors, [{ field: 'temperature', message: 'required, expected a finite number' }]);
  const nan = validateReading({ type: 'temperature', buildingId: 'b', roomId: 'r', timestamp: now, temperature: Number.NaN });
  t.same(!nan.ok && nan.errors, [{ field: 'temperature', message: 'expected a finite number, got NaN' }]);
  const inf = validateReading({ type: 'temperature', buildingId: 'b', roomId: 'r', timestamp: Infinity, temperature: 20 });
  t.same(!inf.ok && inf.errors, [{ field: 'timestamp', message: 'expected a finite number, got Infinity' }]);
  const fractional = validateReading({ type: 'apClients', buildingId: 'b', roomId: 'ap-1', timestamp: now, apClients: 2.5 });
  t.notOk(fractional.ok);
});

t.test('an unregistered or missing type is rejected', async (t) => {
  const r = validateReading({ type: 'humidity', buildingId: 'b' });
  t.notOk(r.ok);
  if (!r.ok) t.match(r.errors[0]?.message, /unregistered metric "humidity"; known: temperature/);
  t.notOk(validateReading({ buildingId: 'b' }).ok);
  t.notOk(validateReading(null).ok);
  t.notOk(validateReading([]).ok);
  t.notOk(validateReading({ type: '__proto__' }).ok);
});

t.test('action arguments use the same field check', async (t) => {
  t.ok(validateActionArguments('temperature', 'setTarget', { target: 21.5 }).ok);
  t.ok(validateActionArguments('temperature', 'increase', {}).ok, 'optional parameter may be absent');
  const noMetric = validateActionArguments('lux', 'setTarget', {});
  t.equal(!noMetric.ok && noMetric.reason, 'unknown_metric');
  const noAction = validateActionArguments('peopleCount', 'setTarget', { target: 1 });
  t.equal(!noAction.ok && noAction.reason, 'unknown_action');
  const bad = validateActionArguments('temperature', 'setTarget', { target: 'warm' });
  t.equal(!bad.ok && bad.reason, 'invalid_arguments');
  t.same(!bad.ok && bad.errors, [{ field: 'target', message: 'expected a finite number, got "warm"' }]);
  const extra = validateActionArguments('temperature', 'setTarget', { target: 20, url: 'http://169.254.169.254/' });
  t.same(!extra.ok && extra.errors, [{ field: 'url', message: 'not a declared field of this metric' }]);
  const notObject = validateActionArguments('temperature', 'setTarget', [20]);
  t.equal(!notObject.ok && notObject.reason, 'invalid_arguments');
  t.same(validateFields([], {}), [], 'an empty parameter list with an empty argument map yields no errors');
});

t.test('breaches: a value strictly above its bound', async (t) => {
  const reading = { type: 'temperature', buildingId: 'b', roomId: 'r', timestamp: now, temperature: 27, humidity: 40 };
  t.same(breachesOf(temperature, reading, { maxTemperature: 26, maxHumidity: 60 }), [
    { type: 'temperature', field: 'temperature', bound: 'maxTemperature', threshold: 26, value: 27 },
  ]);
  t.same(breachesOf(temperature, { ...reading, temperature: 26 }, { maxTemperature: 26 }), [], 'equal is not over');
  t.same(breachesOf(temperature, reading, {}), [], 'no bound, no breach');
});

t.test('the catalog entry and the browser view', async (t) => {
  const c = contractOf(temperature);
  t.equal(c.interfaceName, 'ITemperature');
  t.equal(c.actions.length, 3);
  t.same(declaredView(temperature, { type: 'temperature', buildingId: 'b', roomId: 'r', timestamp: 1, temperature: 20, extra: 'x' }), {
    type: 'temperature', buildingId: 'b', roomId: 'r', timestamp: 1, temperature: 20,
  });
});
