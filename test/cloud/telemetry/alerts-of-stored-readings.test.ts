/**
 * Only a reading the batch stores raises its alerts. A repeat of a stored reading keeps the stored
 * copy, so an alert raised by the repeat's value would name a value the service never stored: a gateway
 * re-sending a reading with a corrected (or corrupted) value must not page anyone.
 */
import t from 'tap';
import { SHARED_KEY, startHarness, temperatureReading } from './support/harness.js';

interface OutboxRow {
  room_id: string;
  value: number;
}

t.test('a repeat carrying a breaching value raises no alert; the readings the batch stores do', async (t) => {
  const h = await startHarness(t);
  await h.pool.query(`INSERT INTO thresholds (building_id, room_id, metric, bounds) VALUES ('b1', NULL, 'temperature', '{"maxTemperature": 25}')`);
  const now = h.clock.now;
  const outbox = async () =>
    (await h.pool.query<OutboxRow>(`SELECT payload->>'roomId' AS room_id, (payload->>'value')::float8 AS value FROM alert_outbox ORDER BY payload->>'roomId'`)).rows;

  t.same(await h.ingest.ingest(SHARED_KEY, { batchId: 'first', readings: [temperatureReading('b1', 'r1', now - 3000, 20)] }), { accepted: 1 });
  t.same(await outbox(), [], 'a reading under its bound raises nothing');

  const second = [
    // r1 again, now over the bound: the stored 20 is kept
    temperatureReading('b1', 'r1', now - 3000, 30),
    // new, over the bound
    temperatureReading('b1', 'r2', now - 2000, 31),
    // twice in the batch: the first copy (under the bound) is stored, the second is a repeat
    temperatureReading('b1', 'r3', now - 1000, 24),
    temperatureReading('b1', 'r3', now - 1000, 33),
  ];
  t.same(await h.ingest.ingest(SHARED_KEY, { batchId: 'second', readings: second }), { accepted: 4 });
  const stored = await h.pool.query<{ room_id: string; value: number }>('SELECT room_id, value FROM readings ORDER BY room_id');
  t.same(stored.rows, [
    { room_id: 'r1', value: 20 },
    { room_id: 'r2', value: 31 },
    { room_id: 'r3', value: 24 },
  ]);
  t.same(await outbox(), [{ room_id: 'r2', value: 31 }], 'only the stored breach is queued');

  // the same holds on the COPY path's fallback when every reading of a batch is a repeat
  t.same(await h.ingest.ingest(SHARED_KEY, { batchId: 'third', readings: [temperatureReading('b1', 'r3', now - 1000, 40)] }), { accepted: 1 });
  t.same(await outbox(), [{ room_id: 'r2', value: 31 }], 'a batch of repeats queues nothing');
});

t.test('a stored breach re-sent with another value keeps the alert it first raised', async (t) => {
  const h = await startHarness(t);
  await h.pool.query(`INSERT INTO thresholds (building_id, room_id, metric, bounds) VALUES ('b1', NULL, 'temperature', '{"maxTemperature": 25}')`);
  const now = h.clock.now;
  t.same(await h.ingest.ingest(SHARED_KEY, { batchId: 'a', readings: [temperatureReading('b1', 'r1', now - 1000, 30)] }), { accepted: 1 });
  t.same(await h.ingest.ingest(SHARED_KEY, { batchId: 'b', readings: [temperatureReading('b1', 'r1', now - 1000, 45), temperatureReading('b1', 'r2', now, 26)] }), { accepted: 2 });
  const { rows } = await h.pool.query<OutboxRow>(`SELECT payload->>'roomId' AS room_id, (payload->>'value')::float8 AS value FROM alert_outbox ORDER BY payload->>'roomId'`);
  t.same(rows, [
    { room_id: 'r1', value: 30 },
    { room_id: 'r2', value: 26 },
  ]);
});
