/**
 * zoneTransition readings are keyed by their origin too (docs/decisions/005): people walking into one
 * zone from two others in the same instant are two readings, both stored, both rolled up into the
 * destination's hour. A re-sent transition is still stored once.
 */
import t from 'tap';
import { migrate } from '../../../cloud/telemetry/store/migrate.js';
import { PgReadingsStore } from '../../../cloud/telemetry/store/readings.js';
import { poolMigratedBefore } from './support/database.js';
import { RetentionJob } from '../../../cloud/telemetry/retention.js';
import { PgRetentionStore } from '../../../cloud/telemetry/store/retention.js';
import { silentLogger } from '../../../shared/logger.js';
import { call, countRows, peopleReading, postSigned, startHarness } from './support/harness.js';

const at = (iso: string) => Date.parse(iso);

function transition(buildingId: string, fromRoomId: string, roomId: string, timestamp: number, zoneTransition: number) {
  return { type: 'zoneTransition', buildingId, roomId, fromRoomId, timestamp, zoneTransition };
}

t.test('two transitions into one zone at one instant, from different zones, are both stored', async (t) => {
  const h = await startHarness(t);
  const now = h.clock.now;
  const answer = await postSigned(h, {
    batchId: 'tick-1',
    readings: [
      transition('b1', 'lobby', 'cafe', now, 3),
      transition('b1', 'office', 'cafe', now, 5),
      transition('b1', 'cafe', 'lobby', now, 2),
      peopleReading('b1', 'cafe', now, 8),
    ],
  });
  t.equal(answer.status, 200);
  t.same(answer.json, { accepted: 4 });
  const { rows } = await h.pool.query<{ room_id: string; from_room_id: string; value: number; payload: unknown }>(
    `SELECT room_id, from_room_id, value, payload FROM readings WHERE metric = 'zoneTransition' ORDER BY room_id, from_room_id`,
  );
  t.same(rows, [
    { room_id: 'cafe', from_room_id: 'lobby', value: 3, payload: { fromRoomId: 'lobby' } },
    { room_id: 'cafe', from_room_id: 'office', value: 5, payload: { fromRoomId: 'office' } },
    { room_id: 'lobby', from_room_id: 'cafe', value: 2, payload: { fromRoomId: 'cafe' } },
  ]);
  const people = await h.pool.query<{ from_room_id: string }>(`SELECT from_room_id FROM readings WHERE metric = 'peopleCount'`);
  t.same(people.rows, [{ from_room_id: '' }], 'other metrics have no origin: their key is the four columns');
  const metrics = await call(`${h.url}/metrics`, 'GET');
  t.match(metrics.text, /telemetry_readings_stored_total\{service="telemetry"\} 4/, 'every accepted reading is counted as stored');
});

t.test('a re-sent transition under a new batch id is stored once; the same pair at another instant is new', async (t) => {
  const h = await startHarness(t);
  const now = h.clock.now;
  t.equal((await postSigned(h, { batchId: 'a', readings: [transition('b1', 'lobby', 'cafe', now, 3)] })).status, 200);
  const again = await postSigned(h, { batchId: 'b', readings: [transition('b1', 'lobby', 'cafe', now, 3), transition('b1', 'office', 'cafe', now, 1)] });
  t.equal(again.status, 200);
  t.equal(await countRows(h.pool, 'readings'), 2, 'the repeat kept its first copy, the new origin was added');
  const stored = await h.pool.query(`SELECT from_room_id, value, payload FROM readings ORDER BY from_room_id`);
  t.same(stored.rows, [
    { from_room_id: 'lobby', value: 3, payload: { fromRoomId: 'lobby' } },
    { from_room_id: 'office', value: 1, payload: { fromRoomId: 'office' } },
  ], 'the batch written again keeping first copies writes the origin too');
  t.equal((await postSigned(h, { batchId: 'c', readings: [transition('b1', 'lobby', 'cafe', now + 1000, 4)] })).status, 200);
  t.equal(await countRows(h.pool, 'readings'), 3);
});

t.test('two transitions into one zone at one instant, from different zones, each raise their alert; a re-send raises none', async (t) => {
  const h = await startHarness(t);
  await h.pool.query(`INSERT INTO thresholds (building_id, room_id, metric, bounds) VALUES ('b1', NULL, 'zoneTransition', '{"maxTransitions": 4}')`);
  const now = h.clock.now;
  const tick = [transition('b1', 'lobby', 'cafe', now, 6), transition('b1', 'office', 'cafe', now, 9)];
  t.equal((await postSigned(h, { batchId: 'tick-1', readings: tick })).status, 200);
  const alerts = async () =>
    (await h.pool.query<{ alert_id: string; value: number }>(`SELECT alert_id, (payload->>'value')::float8 AS value FROM alert_outbox ORDER BY value`)).rows;
  const first = await alerts();
  t.same(first.map((a) => a.value), [6, 9], 'one alert per breaching reading');
  t.equal(new Set(first.map((a) => a.alert_id)).size, 2, 'with distinct ids');
  t.equal((await postSigned(h, { batchId: 'tick-1-resent', readings: tick })).status, 200);
  t.same(await alerts(), first, 'the re-sent readings keep their ids and are queued once');
});

t.test("the hourly rollup sums a zone's transitions whatever their origin", async (t) => {
  const h = await startHarness(t, { now: at('2024-06-01T12:00:00Z') });
  const answer = await postSigned(h, {
    readings: [
      transition('b1', 'lobby', 'cafe', at('2024-06-01T09:10:00Z'), 3),
      transition('b1', 'office', 'cafe', at('2024-06-01T09:10:00Z'), 5),
      transition('b1', 'lobby', 'cafe', at('2024-06-01T09:40:00Z'), 4),
    ],
  });
  t.equal(answer.status, 200);
  const job = new RetentionJob({
    store: new PgRetentionStore(h.pool),
    onDropped: (name) => h.readings.forgetPartition(name),
    clock: () => h.clock.now,
    privacyFloor: 1,
    logger: silentLogger(),
  });
  await job.runOnce();
  const { rows } = await h.pool.query(`SELECT room_id, metric, count::int AS count, min, max, sum, suppressed FROM readings_hourly ORDER BY room_id`);
  t.same(rows, [{ room_id: 'cafe', metric: 'zoneTransition', count: 3, min: 3, max: 5, sum: 12, suppressed: false }]);
});

t.test('the key of the readings table is the four seed columns and the origin', async (t) => {
  const h = await startHarness(t);
  const { rows } = await h.pool.query<{ definition: string }>(
    `SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint WHERE conrelid = 'readings'::regclass AND contype = 'p'`,
  );
  t.same(rows, [{ definition: 'PRIMARY KEY (building_id, room_id, metric, ts, from_room_id)' }]);
});

t.test('migration 0005 keeps every stored row and gives stored transitions their origin, from the payload', async (t) => {
  const pool = await poolMigratedBefore(t, '0005');
  const now = Date.now();
  await new PgReadingsStore(pool).ensurePartitions([now]);
  await pool.query(
    `INSERT INTO readings (building_id, room_id, metric, ts, value, payload) VALUES
       ('b1', 'cafe', 'zoneTransition', to_timestamp($1 / 1000.0), 3, '{"fromRoomId":"lobby"}'),
       ('b1', 'cafe', 'peopleCount', to_timestamp($1 / 1000.0), 8, '{}')`,
    [now],
  );

  t.same(await migrate(pool), ['0005_readings_from_room']);
  const { rows } = await pool.query(`SELECT metric, from_room_id, value FROM readings ORDER BY metric`);
  t.same(rows, [
    { metric: 'peopleCount', from_room_id: '', value: 8 },
    { metric: 'zoneTransition', from_room_id: 'lobby', value: 3 },
  ]);
  await pool.query(`INSERT INTO readings (building_id, room_id, metric, ts, value, payload) VALUES ('b1', 'cafe', 'zoneTransition', to_timestamp($1 / 1000.0), 5, '{"fromRoomId":"office"}')`, [now]);
  t.equal(await countRows(pool, 'readings'), 3, 'a second origin at the same instant is a new row');
  t.same(await migrate(pool), [], 'applied once');
});
