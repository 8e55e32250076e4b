/**
 * A stop of the alert relay while Kafka has gone silent under a send (a partition, a blackholing
 * balancer: the connection stays open and nothing answers). The send runs inside the PostgreSQL
 * transaction holding its outbox rows, and kafkajs waits its request timeout on each retry, so an
 * unbounded send held the stop, and the service's pool.end() behind it, past the stop deadline. The
 * relay gives up on the send instead: the stop returns, the rows are unsent again (not lost, not held),
 * and a relay started once Kafka is back sends them. The real stack broker, behind a proxy frozen once
 * the relay is connected; the outbox is PostgreSQL.
 */
import '../../../shared/kafkajs-idle-loop.js';
import { Kafka, logLevel } from 'kafkajs';
import t from 'tap';
import { AlertRelay } from '../../../cloud/telemetry/broker/alert-relay.js';
import { kafkaAlertSink } from '../../../cloud/telemetry/broker/kafka-alerts.js';
import { PgOutboxStore } from '../../../cloud/telemetry/store/outbox.js';
import { SHARED_KEY, startHarness, temperatureReading, until } from './support/harness.js';
import { collect, createTopics, stackBrokers, uniqueName } from './support/kafka.js';
import { startFreezableProxy } from './support/silent-broker.js';
import { capturedLogger } from '../../support/captured-logger.js';

t.test('a stop while Kafka is silent under a send returns, and the alerts stay unsent for the next relay', async (t) => {
  const h = await startHarness(t);
  await h.pool.query(`INSERT INTO thresholds (building_id, room_id, metric, bounds) VALUES ('b1', NULL, 'temperature', '{"maxTemperature": 25}')`);
  const topic = uniqueName('alerts');
  await createTopics(t, [topic], 1);
  const broker = stackBrokers()[0]!;
  const proxy = await startFreezableProxy(t, broker);
  // A request timeout longer than the test's: waiting for kafkajs to give up on the silence cannot pass.
  const kafka = new Kafka({ clientId: 'alert-relay-stop', brokers: [broker], socketFactory: proxy.socketFactory, requestTimeout: 600_000, logLevel: logLevel.NOTHING });
  const { logger, lines } = capturedLogger('alert-relay-test');
  const outbox = new PgOutboxStore(h.pool);
  const relayWith = () => new AlertRelay({ outbox, sink: kafkaAlertSink(kafka, topic), logger, idleMs: 100, retryMs: 60_000 });
  const breach = (room: string, offset: number) => h.ingest.ingest(SHARED_KEY, { readings: [temperatureReading('b1', room, h.clock.now - 10_000 + offset, 30)] });
  const unsent = async () => (await h.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM alert_outbox WHERE sent_at IS NULL')).rows[0]!.n;
  // Unsent rows no transaction holds: the relay's SELECT … FOR UPDATE holds them for as long as its send.
  const unheld = async () => (await h.pool.query('SELECT alert_id FROM alert_outbox WHERE sent_at IS NULL FOR UPDATE SKIP LOCKED')).rowCount;

  const first = relayWith();
  t.teardown(() => first.stop());
  await first.start();
  // One alert through the proxy: the relay is connected, its producer knows the topic's leader.
  t.same(await breach('room-0', 0), { accepted: 1 });
  await until(async () => (await unsent()) === 0, 30_000, 'the first alert to be relayed');

  proxy.freeze();
  for (let i = 1; i <= 3; i++) t.same(await breach(`room-${i}`, i), { accepted: 1 });
  first.nudge();
  await until(async () => (await unheld()) === 0 && proxy.swallowed() > 0, 30_000, 'the send to go into the silence');

  await t.resolves(first.stop(), 'the stop returns while Kafka is still silent');
  t.ok(
    lines.some((l) => l.msg === 'alert relay failed; alerts stay in the outbox' && String(l.error).startsWith('AlertSendTimedOut')),
    'the relay gave up on the send',
  );
  t.equal(await unsent(), 3, 'the alerts of that send are still unsent');
  t.equal(await unheld(), 3, 'and no longer held: the transaction rolled back and returned its client');

  proxy.heal();
  const second = relayWith();
  t.teardown(() => second.stop());
  await second.start();
  await until(async () => (await unsent()) === 0, 30_000, 'the next relay to send them');
  const { rows } = await h.pool.query<{ alert_id: string }>('SELECT alert_id FROM alert_outbox ORDER BY alert_id');
  const ids = rows.map((r) => r.alert_id);
  const { messages } = await collect(t, topic);
  const onTopic = () => new Set(messages.map((m) => String(m.value.alertId)));
  await until(() => ids.every((id) => onTopic().has(id)), 30_000, 'every alert on the topic');
  // A send given up on may land anyway: at least once, never lost.
  t.same([...onTopic()].sort(), ids, 'every alert of the outbox reached the topic, and nothing else');
  await second.stop();
  // The producer given up on landed its send once Kafka answered again; it must not stay connected.
  await until(() => proxy.open() === 0, 30_000, 'every connection through the proxy to close');
  t.equal(proxy.open(), 0, 'no producer is left connected');
});
