/**
 * The fast path of ingest (domain/canonical-batch.ts) checked against the general path: whatever
 * body the scanner reads, JSON.parse and validation accept too, with the same rows (and the same
 * binary COPY of them), the same Redis messages and the same batch id; and every valid batch JSON.stringify writes in declaration order
 * with plain names and short numbers is read by the scanner. The one-pass serialisation
 * (domain/encoding.ts) and the allocation-free field check are held against the functions they
 * replace.
 */
import t from 'tap';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { METRICS } from '../../../shared/catalog/metrics.js';
import { conformsToFields, declaredView, validateFields, validateReading } from '../../../shared/catalog/validate.js';
import type { MetricDeclaration } from '../../../shared/catalog/declaration.js';
import { DEFAULT_LIMITS, shapeOfBatch, validateBatch, type ReadingRow } from '../../../cloud/telemetry/domain/batch.js';
import { scanCanonicalBatch } from '../../../cloud/telemetry/domain/canonical-batch.js';
import { encodeReading } from '../../../cloud/telemetry/domain/encoding.js';
import { publishedBatch, selectedMessages } from '../../../cloud/telemetry/broker/redis-publisher.js';
import { binaryCopyRows } from '../../../cloud/telemetry/store/copy-binary.js';

const now = 1_763_000_000_000;
const metrics = Object.values(METRICS);

/** What the general path makes of a body: the rows, the messages as one array, the batch id. */
function generalPath(body: string) {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  const shape = shapeOfBatch(parsed);
  if (!shape.ok) return undefined;
  const checked = validateBatch(shape.readings, now);
  if (!checked.ok) return undefined;
  const encoded = checked.readings.map(encodeReading);
  const bounded = [...new Set(checked.readings.filter((r) => r.metric.bounds.length > 0).map((r) => r.metric.key))];
  return { batchId: shape.batchId, rows: encoded.map((e) => e.row), published: publishedBatch(encoded), bounded };
}

/** A row as plain data with its payload as text (a scanned row keeps its payload as bytes of the body). */
const asData = (r: ReadingRow): ReadingRow => ({ buildingId: r.buildingId, roomId: r.roomId, metric: r.metric, ts: r.ts, value: r.value, payload: r.payload, fromRoomId: r.fromRoomId });

/** The row as the general path built it before one-pass serialisation (payload as an object). */
function previousRow(metric: MetricDeclaration, reading: Record<string, unknown>) {
  const payload: Record<string, unknown> = {};
  for (const { name } of metric.fields) {
    if (!['type', 'buildingId', 'roomId', 'timestamp'].includes(name) && name !== metric.value_field && Object.prototype.hasOwnProperty.call(reading, name)) payload[name] = reading[name];
  }
  return { payload: JSON.stringify(payload), fromRoomId: typeof payload.fromRoomId === 'string' ? payload.fromRoomId : '' };
}

const plainName = fc.stringMatching(/^[!#-[\]-~][ !#-[\]-~]{0,20}$/);
const oddName = fc.oneof(
  plainName,
  fc.constantFrom('a"b', 'a\\b', ' lead', 'tab\there', 'é-room', 'x'.repeat(256), 'x'.repeat(257), '', '\u2028', 'ok'),
  fc.string({ unit: 'grapheme', maxLength: 6 }),
);
const shortNumber = fc.oneof(
  fc.integer({ min: 0, max: 1000 }),
  fc.integer({ min: -1000, max: 1000 }).map((n) => n / 10),
  fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, 1e-6, 1e-7, 123456789012345, 1234567890123456, 0.1 + 0.2, 1e21, 5e-324),
);
const plainNumber = fc.oneof(fc.integer({ min: -1000, max: 100_000 }), fc.integer({ min: -10_000, max: 10_000 }).map((n) => n / 100));
const plainTimestamp = fc.integer({ min: now - 13 * 86_400_000, max: now + 3_600_000 });
const timestamp = fc.oneof(fc.integer({ min: now - 13 * 86_400_000, max: now + 3_600_000 }), fc.double({ min: now - 1000, max: now + 1000, noNaN: true }), fc.constantFrom(now - 15 * 86_400_000, now + 2 * 86_400_000));

/** A reading of `metric` in declaration order; `odd` lets names and values stray from the plain. */
function readingOf(metric: MetricDeclaration, odd: boolean) {
  const fields = metric.fields.map((f) => {
    const value =
      f.name === 'timestamp'
        ? odd
          ? timestamp
          : plainTimestamp
        : f.kind === 'NonEmptyString'
          ? odd
            ? fc.oneof(oddName, shortNumber)
            : plainName
          : f.kind === 'NonNegativeInt'
            ? odd
              ? fc.oneof(shortNumber, fc.nat(), oddName)
              : fc.nat({ max: 10_000 })
            : odd
              ? fc.oneof(shortNumber, oddName)
              : plainNumber;
    return fc.record({ name: fc.constant(f.name), value, present: f.required && !odd ? fc.constant(true) : fc.boolean() });
  });
  return fc.tuple(...fields).map((entries) => {
    const reading: Record<string, unknown> = { type: metric.key };
    for (const e of entries) if (e.present) reading[e.name] = e.value;
    return reading;
  });
}

const anyReading = (odd: boolean) => fc.constantFrom(...metrics).chain((m) => readingOf(m, odd));
const batchIdOf = fc.option(fc.oneof(plainName, oddName), { nil: undefined });

t.test('whatever the scanner reads, the general path accepts alike', async (t) => {
  let read = 0;
  fc.assert(
    fc.property(
      fc.array(fc.oneof({ weight: 6, arbitrary: anyReading(false) }, { weight: 1, arbitrary: anyReading(true) }), { minLength: 0, maxLength: 8 }),
      batchIdOf,
      fc.constantFrom('plain', 'plain', 'plain', 'batchId last', 'shuffled', 'spaced', 'extra'),
      (readings, batchId, layout) => {
        let list: unknown[] = readings;
        if (layout === 'shuffled') list = readings.map((r) => Object.fromEntries(Object.entries(r).reverse()));
        if (layout === 'extra') list = readings.map((r, i) => (i === 0 ? { ...r, mac: 'aa' } : r));
        const body = layout === 'batchId last' ? JSON.stringify({ readings: list, batchId }) : JSON.stringify({ batchId, readings: list }, null, layout === 'spaced' ? 1 : undefined);
        const fast = scanCanonicalBatch(Buffer.from(body), now, DEFAULT_LIMITS);
        if (fast === undefined) return;
        const general = generalPath(body);
        if (general === undefined) throw new Error(`the scanner read a body the general path refuses: ${body}`);
        assert.deepEqual(fast.rows.map(asData), general.rows);
        assert.deepEqual(Buffer.concat(binaryCopyRows(fast.rows)), Buffer.concat(binaryCopyRows(general.rows)), 'the same binary COPY');
        assert.equal(fast.batchId, general.batchId);
        assert.deepEqual(fast.boundedMetrics, general.bounded);
        assert.equal(fast.messages.toString('utf8'), general.published.json.toString('utf8'), 'the readings as sent are the messages');
        assert.deepEqual(fast.starts, general.published.starts);
        read += 1;
      },
    ),
    { numRuns: 3000 },
  );
  t.ok(read > 100, `the scanner read ${read} of the generated bodies`);
});

t.test('every plain batch in declaration order is read by the scanner', async (t) => {
  let read = 0;
  fc.assert(
    fc.property(fc.array(anyReading(false), { minLength: 1, maxLength: 8 }), fc.option(plainName, { nil: undefined }), (readings, batchId) => {
      const body = JSON.stringify({ batchId, readings });
      const general = generalPath(body);
      const canonicalNumbers = readings.every((r) => Object.values(r).every((v) => typeof v !== 'number' || (/^-?\d+(\.\d+)?$/.test(String(v)) && !Object.is(v, -0) && String(v).replace(/^-?0?\.?0*/, '').replace('.', '').length <= 15)));
      if (general === undefined || !canonicalNumbers) return;
      const fast = scanCanonicalBatch(Buffer.from(body), now, DEFAULT_LIMITS);
      assert.ok(fast, body);
      assert.deepEqual(fast.rows.map(asData), general.rows);
      read += 1;
    }),
    { numRuns: 2000 },
  );
  t.ok(read > 500, `${read} plain batches read`);
});

t.test('the bench and gateway shape is canonical, and a too large or empty batch is not', async (t) => {
  const reading = (i: number) => ({ type: 'temperature', buildingId: 'b1', roomId: `room-${i}`, timestamp: now - i, temperature: 20 + i / 10, humidity: 40, sensorId: 'stat-1' });
  const body = JSON.stringify({ batchId: 'x', readings: [reading(1), { type: 'peopleCount', buildingId: 'b1', roomId: 'r', timestamp: now, peopleCount: 3 }] });
  const fast = scanCanonicalBatch(Buffer.from(body), now, DEFAULT_LIMITS);
  t.same(fast?.rows.map(asData), [
    { buildingId: 'b1', roomId: 'room-1', metric: 'temperature', ts: now - 1, value: 20.1, payload: '{"humidity":40,"sensorId":"stat-1"}', fromRoomId: '' },
    { buildingId: 'b1', roomId: 'r', metric: 'peopleCount', ts: now, value: 3, payload: '{}', fromRoomId: '' },
  ]);
  const zone = JSON.stringify({ readings: [{ type: 'zoneTransition', buildingId: 'b', roomId: 'lobby', fromRoomId: 'atrium', timestamp: now, zoneTransition: 2 }] });
  t.same(scanCanonicalBatch(Buffer.from(zone), now, DEFAULT_LIMITS)?.rows.map(asData)[0], { buildingId: 'b', roomId: 'lobby', metric: 'zoneTransition', ts: now, value: 2, payload: '{"fromRoomId":"atrium"}', fromRoomId: 'atrium' });
  const limits = { ...DEFAULT_LIMITS, maxReadings: 1 };
  t.equal(scanCanonicalBatch(Buffer.from(body), now, limits), undefined, 'over the limit: the general path answers 413');
  t.equal(scanCanonicalBatch(Buffer.from('{"readings":[]}'), now, DEFAULT_LIMITS), undefined);
  t.equal(scanCanonicalBatch(Buffer.from(`${body}\n`), now, DEFAULT_LIMITS), undefined);
  t.equal(scanCanonicalBatch(Buffer.from(body.replace('"stat-1"', 'null')), now, DEFAULT_LIMITS), undefined);
});

t.test('a reading is serialised once, as the view and the payload object were', async (t) => {
  let checkedReadings = 0;
  // Half plain: of odd readings alone, a handful in 2000 are valid, and only valid ones are checked.
  fc.assert(
    fc.property(fc.oneof(anyReading(false), anyReading(true)), (input) => {
      const checked = validateReading(input);
      if (!checked.ok) return;
      const { message, row } = encodeReading(checked);
      assert.equal(message, JSON.stringify(declaredView(checked.metric, checked.reading)));
      assert.deepEqual({ payload: row.payload, fromRoomId: row.fromRoomId }, previousRow(checked.metric, checked.reading));
      checkedReadings += 1;
    }),
    { numRuns: 4000 },
  );
  t.ok(checkedReadings > 1000, `every valid reading serialised as before: ${checkedReadings} of the generated readings were valid and checked`);
  const nulls = validateReading({ type: 'temperature', buildingId: 'b', roomId: 'r', timestamp: now, temperature: 1, humidity: null });
  t.ok(nulls.ok);
  if (nulls.ok) t.equal(encodeReading(nulls).row.payload, '{"humidity":null}', 'an optional field sent as null is kept, as before');
});

t.test('the field check without errors agrees with the one that lists them', async (t) => {
  fc.assert(
    fc.property(fc.constantFrom(...metrics), anyReading(true), fc.option(fc.dictionary(fc.string({ maxLength: 4 }), fc.oneof(oddName, shortNumber, fc.constant(null)), { maxKeys: 2 }), { nil: undefined }), (metric, reading, extra) => {
      const input = { ...reading, ...extra };
      assert.equal(conformsToFields(metric.fields, input, 'type'), validateFields(metric.fields, input, ['type']).length === 0);
    }),
    { numRuns: 3000 },
  );
  t.pass('the two checks agree');
});

t.test('a selection of published messages keeps their bytes and buildings', async (t) => {
  const batch = publishedBatch([
    { buildingId: 'b1', message: '{"type":"a","x":"é"}' },
    { buildingId: 'b2', message: '{"type":"b"}' },
    { buildingId: 'b1', message: '{"type":"c"}' },
  ]);
  t.equal(batch.json.toString('utf8'), '[{"type":"a","x":"é"},{"type":"b"},{"type":"c"}]');
  t.same(batch.starts, [1, 23, 36]);
  const selected = selectedMessages(batch, [0, 2]);
  t.equal(selected.json.toString('utf8'), '[{"type":"a","x":"é"},{"type":"c"}]');
  t.same(selected.starts, [1, 23]);
  t.same(selected.buildingIds, ['b1', 'b1']);
});
