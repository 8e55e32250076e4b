/**
 * A reading re-sent under another batch id is stored once, whatever fraction of a millisecond its
 * timestamp carries. The COPY path and the keep-first fallback (the batch written again when COPY hits
 * a stored key) must turn the timestamp into the very same microsecond: PostgreSQL's
 * `to_timestamp(ms / 1000.0)` rounds some fractions to the microsecond next to the one COPY stores, and
 * the repeat was then no conflict but a second row, counted twice in the rollup and published twice.
 */
import t from 'tap';
import { RetentionJob } from '../../../cloud/telemetry/retention.js';
import { HOUR_MS } from '../../../cloud/telemetry/domain/utc.js';
import { postgresMicros } from '../../../cloud/telemetry/store/copy-binary.js';
import { PgRetentionStore } from '../../../cloud/telemetry/store/retention.js';
import { silentLogger } from '../../../shared/logger.js';
import { postSigned, startHarness, subscribe, temperatureReading, until } from './support/harness.js';

/** 2025-11-22T19:04:14.802674…Z: COPY stores it at .802675, `to_timestamp(ms / 1000.0)` at .802674. */
const FRACTIONAL = 1763838254802.6746;

t.test('a re-sent reading with a sub-millisecond timestamp is stored, rolled up and published once', async (t) => {
  const h = await startHarness(t, { now: FRACTIONAL + 60_000 });
  const { rows: rounded } = await h.pool.query<{ us: string }>("SELECT (extract(epoch FROM to_timestamp($1::float8 / 1000.0) - timestamptz '2000-01-01 00:00:00+00') * 1000000)::bigint::text AS us", [
    FRACTIONAL,
  ]);
  t.not(rounded[0]?.us, String(postgresMicros(FRACTIONAL)), 'precondition: PostgreSQL rounds this instant to another microsecond than COPY does');
  const messages = await subscribe(t, h.redisUrl, [h.channels.raw]);

  const first = await postSigned(h, { batchId: 'batch-a', readings: [temperatureReading('b1', 'r1', FRACTIONAL, 20)] });
  t.equal(first.status, 200, first.text);
  // The repeat and one new reading: COPY fails on the repeat's key, and the batch is written again
  // keeping the stored copy.
  const second = await postSigned(h, {
    batchId: 'batch-b',
    readings: [temperatureReading('b1', 'r1', FRACTIONAL, 20), temperatureReading('b1', 'r2', FRACTIONAL + 1000, 22)],
  });
  t.equal(second.status, 200, second.text);
  t.same(second.json, { accepted: 2 });

  const { rows } = await h.pool.query<{ room_id: string; n: number }>('SELECT room_id, count(*)::int AS n FROM readings GROUP BY room_id ORDER BY room_id');
  t.same(rows, [
    { room_id: 'r1', n: 1 },
    { room_id: 'r2', n: 1 },
  ], 'the re-sent reading is one row');

  await until(() => messages.length >= 2, 5000, 'the publications');
  // One more batch: its message arrives after any the second batch published.
  t.equal((await postSigned(h, { batchId: 'batch-c', readings: [temperatureReading('b1', 'r3', FRACTIONAL + 2000, 23)] })).status, 200);
  await until(() => messages.some((m) => (m.message as { roomId?: string }).roomId === 'r3'), 5000, 'the last publication');
  t.same(
    messages.map((m) => (m.message as { roomId: string }).roomId),
    ['r1', 'r2', 'r3'],
    'the repeat is not published again',
  );

  h.clock.now = Math.floor(FRACTIONAL / HOUR_MS) * HOUR_MS + 2 * HOUR_MS;
  await new RetentionJob({ store: new PgRetentionStore(h.pool), onDropped: () => undefined, clock: () => h.clock.now, privacyFloor: 5, logger: silentLogger() }).runOnce();
  const { rows: hourly } = await h.pool.query<{ room_id: string; count: number; sum: number }>("SELECT room_id, count::int AS count, sum FROM readings_hourly WHERE room_id = 'r1'");
  t.same(hourly, [{ room_id: 'r1', count: 1, sum: 20 }], 'its hour counts it once');
});
