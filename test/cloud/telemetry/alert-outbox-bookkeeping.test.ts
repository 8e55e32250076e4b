/**
 * The retention job forgets relayed alerts and batch ids only once no reading they cover can be
 * accepted again. A reading may be dated up to a day ahead of the service's clock and is accepted for
 * 14 days after its timestamp, so an alert relayed when the reading arrived must be remembered for
 * longer than 14 days, or a re-sent reading queues it again and Kafka gets it twice.
 */
import t from 'tap';
import { kafkaAlertSink } from '../../../cloud/telemetry/broker/kafka-alerts.js';
import { DAY_MS, HOUR_MS } from '../../../cloud/telemetry/domain/utc.js';
import { RetentionJob } from '../../../cloud/telemetry/retention.js';
import { PgOutboxStore } from '../../../cloud/telemetry/store/outbox.js';
import { PgRetentionStore } from '../../../cloud/telemetry/store/retention.js';
import { silentLogger } from '../../../shared/logger.js';
import { SHARED_KEY, countRows, startHarness, temperatureReading, until } from './support/harness.js';
import { collect, createTopics, directKafka, uniqueName } from './support/kafka.js';

t.test('a re-sent reading dated ahead does not send its alert again after 14 days', async (t) => {
  const h = await startHarness(t);
  const topic = uniqueName('alerts');
  await createTopics(t, [topic], 1);
  const sink = kafkaAlertSink(directKafka(), topic);
  await sink.connect();
  t.teardown(() => sink.disconnect());
  const outbox = new PgOutboxStore(h.pool);
  const relay = () => outbox.relay(500, (messages) => sink.send(messages));
  const job = new RetentionJob({ store: new PgRetentionStore(h.pool), clock: () => h.clock.now, privacyFloor: 5, logger: silentLogger() });
  await h.pool.query(`INSERT INTO thresholds (building_id, room_id, metric, bounds) VALUES ('b1', NULL, 'temperature', '{"maxTemperature": 25}')`);

  // The gateway's clock runs 20 hours ahead; its reading breaches and the alert is relayed at once.
  const arrived = h.clock.now;
  const batch = { batchId: 'tick-1', readings: [temperatureReading('b1', 'r1', arrived + 20 * HOUR_MS, 30)] };
  t.same(await h.ingest.ingest(SHARED_KEY, batch), { accepted: 1 });
  t.equal(await relay(), 1, 'the alert is relayed');

  // 14 days and 2 hours later the reading is still within the raw retention, and the gateway replays it.
  h.clock.now = arrived + 14 * DAY_MS + 2 * HOUR_MS;
  await job.runOnce();
  t.same(await h.ingest.ingest(SHARED_KEY, batch), { accepted: 1 }, 'the repeated batch is answered');
  t.same(await h.ingest.ingest(SHARED_KEY, { ...batch, batchId: 'replay-1' }), { accepted: 1 }, 'the reading under a new batch id too');
  t.equal(await relay(), 0, 'nothing is queued again');
  t.equal(await countRows(h.pool, 'readings'), 1, 'the reading is stored once');
  const onTopic = await collect(t, topic);
  await until(() => onTopic.messages.length >= 1, 30_000, 'the alert on the topic');
  t.equal(onTopic.messages.length, 1, 'Kafka holds the alert once');
});
