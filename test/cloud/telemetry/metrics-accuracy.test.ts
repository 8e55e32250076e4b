/**
 * /metrics during the failures an operator watches it for: a batch PostgreSQL cannot store is counted
 * under outcome="error", and the outbox gauge follows the alerts piling up while Kafka is unreachable.
 */
import { createServer } from 'node:net';
import '../../../shared/kafkajs-idle-loop.js';
import { Kafka, logLevel } from 'kafkajs';
import t from 'tap';
import { AlertRelay } from '../../../cloud/telemetry/broker/alert-relay.js';
import { kafkaAlertSink } from '../../../cloud/telemetry/broker/kafka-alerts.js';
import { PgOutboxStore } from '../../../cloud/telemetry/store/outbox.js';
import { silentLogger } from '../../../shared/logger.js';
import { SHARED_KEY, call, postSigned, startHarness, temperatureReading, until } from './support/harness.js';

/** A loopback port nothing listens on: a Kafka broker that is down. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

t.test('a batch that fails in PostgreSQL answers 500 and is counted as outcome="error"', async (t) => {
  const h = await startHarness(t);
  // The batch id claim cannot be written: every batch carrying an id fails in the database.
  await h.pool.query('ALTER TABLE ingest_batches RENAME TO ingest_batches_away');
  const answer = await postSigned(h, { batchId: 'tick-1', readings: [temperatureReading('b1', 'r1', h.clock.now, 20)] });
  t.equal(answer.status, 500, 'the failure is a 500');
  t.notMatch(answer.text, /ingest_batches/, 'no SQL detail in the answer');
  const metrics = await call(`${h.url}/metrics`, 'GET');
  t.match(metrics.text, /telemetry_ingest_batches_total\{outcome="error",service="telemetry"\} 1\n/, 'counted as an error');
  t.match(metrics.text, /telemetry_ingest_batches_total\{outcome="accepted",service="telemetry"\} 0\n/, 'not as accepted');
});

t.test('while Kafka is unreachable the outbox gauge counts the alerts waiting', async (t) => {
  const h = await startHarness(t);
  await h.pool.query(`INSERT INTO thresholds (building_id, room_id, metric, bounds) VALUES ('b1', NULL, 'temperature', '{"maxTemperature": 25}')`);
  const kafka = new Kafka({ clientId: 'telemetry-gauge', brokers: [`127.0.0.1:${await closedPort()}`], connectionTimeout: 1000, retry: { retries: 0 }, logLevel: logLevel.NOTHING });
  const relay = new AlertRelay({ outbox: new PgOutboxStore(h.pool), sink: kafkaAlertSink(kafka, 'alerts'), logger: silentLogger(), metrics: h.metrics, retryMs: 100, idleMs: 100 });
  await relay.start();
  t.teardown(() => relay.stop());
  t.same(await h.ingest.ingest(SHARED_KEY, { readings: [temperatureReading('b1', 'r1', h.clock.now, 30), temperatureReading('b1', 'r2', h.clock.now, 31)] }), { accepted: 2 });

  const failures = async () => (await h.metrics.relayFailures.get()).values[0]?.value ?? 0;
  const gauge = async () => (await h.metrics.outboxUnsent.get()).values[0]?.value ?? 0;
  // Attempts after the batch committed see both alerts; the gauge must say so once one of them ends.
  const before = await failures();
  await until(async () => (await failures()) >= before + 2, 30_000, 'two relay attempts after the batch');
  t.equal(await gauge(), 2, 'the gauge shows the two alerts waiting');
  const metrics = await call(`${h.url}/metrics`, 'GET');
  t.match(metrics.text, /telemetry_alert_outbox_unsent\{service="telemetry"\} 2\n/, 'and /metrics says so');
});
