/**
 * Outbox rows commit in the order of their seq, the order the relay sends them in. Two batches raising
 * alerts for one room at once: A takes seq 10, B takes 11. Were B to commit first, the relay would send
 * B's alert, and A's after it once A committed: the room's later alert first on its partition. So B's
 * outbox insert must wait until A has committed, on both write paths (COPY, and the statement that keeps
 * the first copy of a repeated reading).
 */
import type pg from 'pg';
import t, { type Test } from 'tap';
import { alertIdOf } from '../../../cloud/telemetry/domain/alerts.js';
import { PgOutboxStore, type OutboxMessage } from '../../../cloud/telemetry/store/outbox.js';
import { SHARED_KEY, startHarness, temperatureReading, until, type Harness } from './support/harness.js';

/** Whether a session of the test's database waits on a lock of this kind (`transactionid`, `advisory`). */
async function someoneWaitsOn(pool: pg.Pool, lock: string): Promise<boolean> {
  const { rows } = await pool.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = $1`, [lock]);
  return rows.length > 0;
}

/**
 * Holds batch A open after its outbox insert took its seq: a transaction of the test's inserts A's
 * alert id first and stays open, so A's insert waits for it. Then batch B, one alert for the same room.
 */
async function concurrentBatches(t: Test, h: Harness, batchA: unknown[], alertIdA: string, batchB: unknown[]): Promise<void> {
  const blocker = await h.pool.connect();
  t.teardown(() => blocker.release());
  await blocker.query('BEGIN');
  await blocker.query(`INSERT INTO alert_outbox (alert_id, message_key, payload) VALUES ($1, 'b1:r1', '{}')`, [alertIdA]);
  const a = h.ingest.ingest(SHARED_KEY, { readings: batchA });
  await until(() => someoneWaitsOn(h.pool, 'transactionid'), 10_000, "batch A's outbox insert to wait");

  let bSettled = false;
  const b = h.ingest.ingest(SHARED_KEY, { readings: batchB }).finally(() => (bSettled = true));
  await until(async () => bSettled || (await someoneWaitsOn(h.pool, 'advisory')), 10_000, 'batch B to wait or finish');
  t.notOk(bSettled, 'batch B has not committed while batch A is open');
  t.ok(await someoneWaitsOn(h.pool, 'advisory'), 'batch B waits on the outbox lock A holds');
  const relayed: string[] = [];
  const relay = (messages: OutboxMessage[]) => void relayed.push(...messages.map((m) => m.alert.alertId));
  const outbox = new PgOutboxStore(h.pool);
  t.equal(await outbox.relay(500, async (messages) => relay(messages)), 0, 'the relay finds nothing to send while A is open');

  await blocker.query('ROLLBACK');
  t.same(await a, { accepted: batchA.length }, 'batch A is stored once the test lets it go');
  t.same(await b, { accepted: batchB.length }, 'then batch B');
  t.equal(await outbox.relay(500, async (messages) => relay(messages)), 2);
  t.equal(relayed.length, 2, 'one alert of each batch relayed');
  t.equal(relayed[0], alertIdA, "A's alert, the older reading, relayed first");
}

const alertIdAt = (timestamp: number) => alertIdOf({ buildingId: 'b1', roomId: 'r1', type: 'temperature', timestamp }, 'maxTemperature');

t.test('a batch written by COPY waits for an open batch that took a lower outbox seq', async (t) => {
  const h = await startHarness(t);
  await h.pool.query(`INSERT INTO thresholds (building_id, room_id, metric, bounds) VALUES ('b1', NULL, 'temperature', '{"maxTemperature": 25}')`);
  const now = h.clock.now;
  await concurrentBatches(t, h, [temperatureReading('b1', 'r1', now - 2000, 30)], alertIdAt(now - 2000), [temperatureReading('b1', 'r1', now - 1000, 31)]);
});

t.test('a batch waits for an open batch that repeated a stored reading and took a lower outbox seq', async (t) => {
  const h = await startHarness(t);
  await h.pool.query(`INSERT INTO thresholds (building_id, room_id, metric, bounds) VALUES ('b1', NULL, 'temperature', '{"maxTemperature": 25}')`);
  const now = h.clock.now;
  const stored = temperatureReading('b1', 'r1', now - 3000, 20);
  t.same(await h.ingest.ingest(SHARED_KEY, { readings: [stored] }), { accepted: 1 });
  // Repeating a stored reading sends batch A down the path that keeps the first copy.
  await concurrentBatches(t, h, [stored, temperatureReading('b1', 'r1', now - 2000, 30)], alertIdAt(now - 2000), [temperatureReading('b1', 'r1', now - 1000, 31)]);
});
