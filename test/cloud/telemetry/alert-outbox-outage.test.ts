import '../../../shared/kafkajs-idle-loop.js';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import t from 'tap';
import { sign } from '../../../shared/hmac.js';
import { freshPgDatabase, quietAtTeardown } from './support/database.js';
import { startFakeDirectory } from '../../support/fake-directory.js';
import { startOwnKafka } from '../../support/peers/kafka.js';
import { SHARED_SECRET, call, temperatureReading, until } from './support/harness.js';
import { startBrokeredService } from './support/brokered-service.js';
import { collect, createTopics, uniqueName } from './support/kafka.js';

t.test('alerts written while the Kafka broker is stopped reach the topic once it is back, each exactly once', async (t) => {
  // First: it fails the test at teardown on a call it was not set up for, which must skip no cleanup.
  const directory = await startFakeDirectory(t);
  // A broker of our own: the test stops and starts it, which the shared stack broker must never see.
  const broker = await startOwnKafka(t);
  const brokers = [broker.broker];
  const alertsTopic = uniqueName('alerts');
  const registrationsTopic = uniqueName('registrations');
  await createTopics(t, [alertsTopic, registrationsTopic], 3, brokers);
  await broker.stop();
  const databaseUrl = await freshPgDatabase(t);
  const pool = quietAtTeardown(new pg.Pool({ connectionString: databaseUrl }));
  const { service, metrics } = await startBrokeredService(t, {
    pool,
    directoryUrl: directory.url,
    alertsTopic,
    registrationsTopic,
    config: { channels: { raw: uniqueName('raw'), filteredPrefix: uniqueName('filtered') + ':' }, relayIdleMs: 100 },
    // Short retries: the relay gives up on a stopped broker quickly and reconnects every brokerRetryMs.
    kafka: new Kafka({ clientId: 'telemetry-outage', brokers, connectionTimeout: 1000, retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 500 }, logLevel: logLevel.NOTHING }),
  });
  const url = `http://127.0.0.1:${service.port}`;
  const ingest = (readings: unknown[]) => {
    const body = JSON.stringify({ readings });
    return call(`${url}/ingest`, 'POST', body, { 'content-type': 'application/json', 'x-signature': sign(body, SHARED_SECRET) });
  };
  await pool.query(`INSERT INTO thresholds (building_id, room_id, metric, bounds) VALUES ('b1', NULL, 'temperature', '{"maxTemperature": 25}')`);

  // The broker is stopped: ingest still answers, and the alerts wait in the outbox.
  const now = Date.now();
  for (let batch = 0; batch < 3; batch++) {
    const answer = await ingest(Array.from({ length: 4 }, (_, i) => temperatureReading('b1', `room-${i}`, now - 10_000 + batch * 100 + i, 26 + batch)));
    t.equal(answer.status, 200, `batch ${batch} accepted while the broker is stopped`);
  }
  const failures = async () => (await metrics.relayFailures.get()).values[0]?.value ?? 0;
  const unsentCount = async () => (await pool.query(`SELECT count(*)::int AS n FROM alert_outbox WHERE sent_at IS NULL`)).rows[0].n as number;
  await until(async () => (await failures()) >= 1, 30_000, 'the relay to fail');
  t.equal(await unsentCount(), 12, 'twelve breaches kept in the outbox');

  await broker.start();
  const first = await collect(t, alertsTopic, brokers);
  await until(() => first.messages.length >= 12, 30_000, 'twelve alerts on the topic');
  await until(async () => (await unsentCount()) === 0, 10_000, 'the outbox to drain');
  await first.stop();

  // The broker goes away again while the relay is connected; a second wave behaves the same.
  const failedBefore = await failures();
  await broker.stop();
  const again = await ingest([temperatureReading('b1', 'room-9', now - 5000, 40), temperatureReading('b1', 'room-9', now - 4000, 41)]);
  t.equal(again.status, 200, 'ingest does not wait on Kafka');
  await until(async () => (await failures()) > failedBefore, 30_000, 'the relay to notice the second outage');
  t.equal(await unsentCount(), 2, 'the second wave kept in the outbox');
  await broker.start();
  await until(async () => (await unsentCount()) === 0, 30_000, 'the outbox to drain again');
  // Everything the topic holds after both restarts, read from the beginning by a new group.
  const { messages: collected } = await collect(t, alertsTopic, brokers);
  await until(() => collected.length >= 14, 30_000, 'fourteen alerts on the topic');
  // Give a duplicate every chance to show up before counting.
  await new Promise((r) => setTimeout(r, 1500));

  const ids = collected.map((m) => m.value.alertId);
  t.equal(collected.length, 14, 'fourteen messages');
  t.equal(new Set(ids).size, 14, 'every alertId exactly once');
  const { rows } = await pool.query(`SELECT alert_id FROM alert_outbox WHERE sent_at IS NOT NULL ORDER BY alert_id`);
  t.same(rows.map((r) => r.alert_id), [...ids].sort(), 'the same alerts the outbox marked sent');
  for (const m of collected) {
    t.equal(m.key, `b1:${m.value.roomId}`, 'keyed {buildingId}:{roomId}');
    t.same(Object.keys(m.value).sort(), ['alertId', 'bound', 'buildingId', 'field', 'roomId', 'threshold', 'timestamp', 'type', 'value']);
    t.match(m.value, { type: 'temperature', field: 'temperature', bound: 'maxTemperature', threshold: 25, buildingId: 'b1' });
  }
  const room9 = collected.filter((m) => m.value.roomId === 'room-9').map((m) => m.partition);
  t.equal(new Set(room9).size, 1, "one room's alerts share a partition");
  t.same(directory.unexpected, []);
});
