/**
 * A room's alerts reach Kafka in the order of their readings: the key `{buildingId}:{roomId}` keeps
 * them on one partition, so the relay must hand them over in that order, within a batch and with
 * several replicas relaying the same outbox at once.
 */
import t from 'tap';
import { PgOutboxStore, type OutboxMessage } from '../../../cloud/telemetry/store/outbox.js';
import { SHARED_KEY, startHarness, temperatureReading } from './support/harness.js';

t.test("one batch's breaches of one room are relayed in the order of their readings", async (t) => {
  const h = await startHarness(t);
  await h.pool.query(`INSERT INTO thresholds (building_id, room_id, metric, bounds) VALUES ('b1', NULL, 'temperature', '{"maxTemperature": 25}')`);
  const now = h.clock.now;
  // Eight breaching readings a second apart, sent newest first as a gateway flushing a buffer might.
  const stamps = Array.from({ length: 8 }, (_, i) => now - 8000 + i * 1000);
  const readings = [...stamps].reverse().map((ts, i) => temperatureReading('b1', 'r1', ts, 30 + i));
  t.same(await h.ingest.ingest(SHARED_KEY, { readings }), { accepted: 8 });

  const sent: OutboxMessage[] = [];
  t.equal(await new PgOutboxStore(h.pool).relay(500, async (messages) => void sent.push(...messages)), 8);
  t.same(sent.map((m) => m.alert.timestamp), stamps, 'oldest reading first');
});

t.test('two replicas relaying at once never send a later alert of a room before an earlier one', async (t) => {
  const h = await startHarness(t);
  await h.pool.query(`INSERT INTO thresholds (building_id, room_id, metric, bounds) VALUES ('b1', NULL, 'temperature', '{"maxTemperature": 25}')`);
  const now = h.clock.now;
  for (const ts of [now - 2000, now - 1000]) t.same(await h.ingest.ingest(SHARED_KEY, { readings: [temperatureReading('b1', 'r1', ts, 30)] }), { accepted: 1 });

  const replicaA = new PgOutboxStore(h.pool);
  const replicaB = new PgOutboxStore(h.pool);
  // What reaches the topic, in order of arrival.
  const topic: number[] = [];
  // Replica A takes the oldest alert; while its send is still under way, replica B polls.
  const byA = await replicaA.relay(1, async (messages) => {
    const byB = await replicaB.relay(1, async (others) => void topic.push(...others.map((m) => m.alert.timestamp)));
    t.equal(byB, 0, 'replica B waits while replica A is relaying');
    topic.push(...messages.map((m) => m.alert.timestamp));
  });
  t.equal(byA, 1);
  t.equal(await replicaB.relay(1, async (others) => void topic.push(...others.map((m) => m.alert.timestamp))), 1, 'then replica B relays the rest');
  t.same(topic, [now - 2000, now - 1000], 'the older alert reached the topic first');
});

t.test('a relay that failed between send and mark leaves its alerts for the next pass, in order', async (t) => {
  const h = await startHarness(t);
  await h.pool.query(`INSERT INTO thresholds (building_id, room_id, metric, bounds) VALUES ('b1', NULL, 'temperature', '{"maxTemperature": 25}')`);
  const now = h.clock.now;
  t.same(await h.ingest.ingest(SHARED_KEY, { readings: [temperatureReading('b1', 'r1', now - 2000, 30), temperatureReading('b1', 'r1', now - 1000, 31)] }), { accepted: 2 });
  const outbox = new PgOutboxStore(h.pool);
  // The send went out, then the process failed before the rows were marked sent.
  await t.rejects(outbox.relay(500, async () => Promise.reject(new Error('lost before the mark'))));
  const again: number[] = [];
  t.equal(await outbox.relay(500, async (messages) => void again.push(...messages.map((m) => m.alert.timestamp))), 2, 'both are sent again');
  t.same(again, [now - 2000, now - 1000], 'in the order of their readings');
  t.equal(await outbox.unsent(), 0);
});
