/**
 * The alert record as the breach path reads it: what counts as malformed (an alertId missing too), the
 * cooldown key (the seed's for ids without `:` or `%`, one per alert for every id) and the seen key, the push topic, and the notification text built from the metric catalog.
 */
import fc from 'fast-check';
import t from 'tap';
import { parseNotification } from '../../../shared/notification.js';
import { alertNotification, cooldownKey, parseAlertRecord, pushTopicOf, seenKey } from '../../../cloud/notification/alert-event.js';

const valid = { alertId: 'a1', type: 'temperature', field: 'temperature', buildingId: 'b1', roomId: 'r1' };
const bytes = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));

t.test('a record with its alertId and the four names parses; telemetry’s extra fields ride along', async (t) => {
  t.same(parseAlertRecord(bytes(valid)), { ok: true, alert: valid });
  const full = { ...valid, value: 30.5, bound: 'maxTemperature', threshold: 28, timestamp: 1_700_000_000_000, extra: 'ignored' };
  t.same(parseAlertRecord(bytes(full)), { ok: true, alert: { ...valid, value: 30.5, bound: 'maxTemperature', threshold: 28 } });
  t.same(parseAlertRecord(bytes({ ...valid, value: null, threshold: null })), { ok: true, alert: { ...valid, value: null, threshold: null } });
});

t.test('anything else is malformed, with a reason', async (t) => {
  const cases: Array<[string, Buffer | null, RegExp]> = [
    ['no value', null, /empty record/],
    ['empty value', Buffer.alloc(0), /empty record/],
    ['not JSON', bytes('{"type":'), /not JSON/],
    ['a JSON array', bytes([valid]), /not a JSON object/],
    ['JSON null', bytes('null'), /not a JSON object/],
    ['alertId missing', bytes({ ...valid, alertId: undefined }), /^alertId: expected a non-empty string/],
    ['alertId empty', bytes({ ...valid, alertId: '' }), /^alertId: expected a non-empty string/],
    ['alertId a number', bytes({ ...valid, alertId: 42 }), /^alertId: expected a non-empty string/],
    ['roomId missing', bytes({ ...valid, roomId: undefined }), /roomId: expected a non-empty string/],
    ['buildingId blank', bytes({ ...valid, buildingId: '  ' }), /buildingId: expected a non-empty string/],
    ['type a number', bytes({ ...valid, type: 7 }), /type: expected a non-empty string/],
    ['value a string', bytes({ ...valid, value: 'hot' }), /value and threshold numbers/],
    ['oversize', Buffer.alloc(70_000, 32), /larger than/],
  ];
  for (const [what, value, reason] of cases) {
    const parsed = parseAlertRecord(value);
    t.equal(parsed.ok, false, what);
    if (!parsed.ok) t.match(parsed.reason, reason, what);
  }
});

t.test('the cooldown key, the seen key and the push topic', async (t) => {
  t.equal(cooldownKey({ type: 'airQuality', field: 'co2', buildingId: 'b 1', roomId: 'r2' }), 'alert:airQuality:co2:b 1:r2', 'the seed’s form');
  t.equal(cooldownKey({ type: 'airQuality', field: 'co2', buildingId: 'b 1', roomId: 'r:2' }), 'alert:airQuality:co2:b 1:r%3A2', '`:` escaped');
  t.equal(seenKey({ alertId: '3f2a' }), 'alert-seen:3f2a');
  const topic = pushTopicOf('alert:airQuality:co2:b1:r2');
  t.equal(topic.length, 32);
  t.match(topic, /^[A-Za-z0-9_-]+$/, 'URL-safe base64, as RFC 8030 asks');
  t.equal(pushTopicOf('alert:airQuality:co2:b1:r2'), topic, 'stable for a key');
  t.not(pushTopicOf('alert:airQuality:co2:b1:r3'), topic);
});

t.test('the notification names the bound, the value and the limit with their unit', async (t) => {
  const base = { id: 'n1', createdAt: '2026-01-01T00:00:00.000Z' };
  const scoped = alertNotification({ ...valid, value: 31.456, bound: 'maxTemperature', threshold: 28 }, { ...base, domainName: 'acme' });
  t.same(scoped, {
    id: 'n1',
    kind: 'alert',
    severity: 'warning',
    title: 'Temperature alert',
    message: 'Maximum temperature exceeded in room r1 of building b1: 31.5 °C (limit 28 °C)',
    buildingId: 'b1',
    roomId: 'r1',
    metric: 'temperature',
    field: 'temperature',
    domainName: 'acme',
    createdAt: base.createdAt,
  });
  t.ok(parseNotification(JSON.stringify(scoped)).ok, 'it is the shared notification schema');
  const bare = alertNotification({ type: 'peopleCount', field: 'peopleCount', buildingId: 'b1', roomId: 'lobby' }, base);
  t.equal(bare.message, 'Maximum occupancy exceeded in room lobby of building b1');
  t.notOk('domainName' in bare, 'unscoped without a domain');
  const byField = alertNotification({ type: 'temperature', field: 'humidity', buildingId: 'b1', roomId: 'r1', value: 81 }, base);
  t.equal(byField.message, 'Maximum relative humidity exceeded in room r1 of building b1: 81 %', 'the bound is found by field when none is named');
});

t.test('two alerts share a cooldown key only when their type, field, building and room are the same', async (t) => {
  const acme = { type: 'temperature', field: 'temperature', buildingId: 'acme', roomId: 'hq:lab' };
  t.not(cooldownKey(acme), cooldownKey({ ...acme, buildingId: 'acme:hq', roomId: 'lab' }), 'room `hq:lab` of `acme` is not room `lab` of `acme:hq`');
  t.not(cooldownKey(acme), cooldownKey({ ...acme, roomId: 'hq%3Alab' }), 'a literal `%3A` is not `:`');
  t.equal(cooldownKey({ ...acme, roomId: '%3A:%' }), 'alert:temperature:temperature:acme:%253A%3A%25', '`%` escaped before `:`');
  // Names of the characters that matter, so that generated pairs often come close.
  const name = fc.stringMatching(/^[a:%3A2]{1,6}$/);
  const alert = fc.record({ type: name, field: name, buildingId: name, roomId: name });
  fc.assert(
    fc.property(alert, alert, (a, b) => (cooldownKey(a) === cooldownKey(b)) === (a.type === b.type && a.field === b.field && a.buildingId === b.buildingId && a.roomId === b.roomId)),
    { numRuns: 5000 },
  );
  fc.assert(fc.property(fc.record({ type: fc.string(), field: fc.string(), buildingId: fc.string(), roomId: fc.string() }), (a) => cooldownKey(a).split(':').length === 5), { numRuns: 2000 });
});
