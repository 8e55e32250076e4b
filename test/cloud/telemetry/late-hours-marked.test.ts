/**
 * Round trip 1 reads the rollup watermark and the batch's hours already marked; a batch marks for a new
 * rollup only the late hours not marked yet, through prepared statements on each connection.
 */
import fc from 'fast-check';
import t from 'tap';
import { HOUR_MS } from '../../../cloud/telemetry/domain/utc.js';
import { lateHoursToMark } from '../../../cloud/telemetry/store/readings.js';
import { countRows, postSigned, startHarness, temperatureReading } from './support/harness.js';

t.test('late hours are marked once, hours after the watermark never', async (t) => {
  const h = await startHarness(t);
  const watermark = Math.floor(h.clock.now / HOUR_MS) * HOUR_MS;
  await h.pool.query('UPDATE rollup_state SET watermark = $1', [new Date(watermark)]);
  const late = watermark - HOUR_MS;
  const hours = async () =>
    (await h.pool.query<{ ms: number }>('SELECT (extract(epoch FROM hour) * 1000)::float8 AS ms FROM rollup_pending ORDER BY hour')).rows.map((r) => r.ms);

  const onTime = await postSigned(h, { batchId: 'on-time', readings: [temperatureReading('b1', 'r1', watermark + 1000, 20)] });
  t.equal(onTime.status, 200, onTime.text);
  t.same(await hours(), [], 'a batch after the watermark marks nothing');

  for (const [i, batchId] of ['late-1', 'late-2', 'late-3'].entries()) {
    const answer = await postSigned(h, { batchId, readings: [temperatureReading('b1', 'r1', late + 1000 + i, 20), temperatureReading('b1', 'r2', late - HOUR_MS + 5, 21)] });
    t.equal(answer.status, 200, answer.text);
  }
  t.same(await hours(), [late - HOUR_MS, late], 'each late hour marked once');
  t.equal(await countRows(h.pool, 'readings'), 5, 'the repeated reading stored once');

  // Without a batch id (nothing to claim) the same statements run.
  const anonymous = await postSigned(h, { readings: [temperatureReading('b1', 'r3', late + 7, 22)] });
  t.equal(anonymous.status, 200, anonymous.text);
  await h.pool.query('DELETE FROM rollup_pending');
  const again = await postSigned(h, { readings: [temperatureReading('b1', 'r4', late + 9, 22)] });
  t.equal(again.status, 200, again.text);
  t.same(await hours(), [late], 'an hour marked again once its mark is gone');
});

t.test('a late reading stored in the next hour (rounded to the microsecond) marks that hour too', async (t) => {
  const h = await startHarness(t);
  const watermark = Math.floor(h.clock.now / HOUR_MS) * HOUR_MS;
  await h.pool.query('UPDATE rollup_state SET watermark = $1', [new Date(watermark)]);
  const hour = watermark - 2 * HOUR_MS;
  // 0.4 µs before the next hour: stored at the next hour, whose rollup it belongs to.
  const edge = hour + HOUR_MS - 0.0004;
  const answer = await postSigned(h, { batchId: 'edge-of-hour', readings: [temperatureReading('b1', 'r1', hour + 1000, 20), temperatureReading('b1', 'r1', edge, 21)] });
  t.equal(answer.status, 200, answer.text);
  const stored = await h.pool.query<{ ms: number }>(`SELECT (extract(epoch FROM ts) * 1000)::float8 AS ms FROM readings WHERE value = 21`);
  t.same(stored.rows.map((r) => r.ms), [hour + HOUR_MS], 'stored at the hour');
  const pending = await h.pool.query<{ ms: number }>('SELECT (extract(epoch FROM hour) * 1000)::float8 AS ms FROM rollup_pending ORDER BY hour');
  t.same(pending.rows.map((r) => r.ms), [hour, hour + HOUR_MS], 'both hours the batch is stored in are marked for a new rollup');
});

t.test('lateHoursToMark: the hours before the watermark not pending yet', async (t) => {
  t.same(lateHoursToMark([0, HOUR_MS], null, []), [], 'no rollup yet: nothing is late');
  fc.assert(
    fc.property(fc.uniqueArray(fc.integer({ min: 0, max: 48 }), { maxLength: 10 }), fc.integer({ min: 0, max: 48 }), fc.array(fc.integer({ min: 0, max: 48 })), (hs, w, ps) => {
      const hours = hs.map((x) => x * HOUR_MS);
      const pending = ps.map((x) => x * HOUR_MS);
      const marked = lateHoursToMark(hours, w * HOUR_MS, pending);
      for (const hour of hours) t.equal(marked.includes(hour), hour < w * HOUR_MS && !pending.includes(hour));
      // In ascending order, whatever the batch's: two batches marking the same hours take their row locks
      // in one order, so they cannot deadlock on rollup_pending.
      t.same(marked, [...marked].sort((a, b) => a - b));
    }),
  );
});
