/**
 * `npm run telemetry` applies registrations stored Snappy-, LZ4- or ZSTD-compressed. kafkajs decodes only
 * gzip by itself: any other batch failed the whole fetch, and the registration consumer crashed,
 * reconnected and crashed again on the same offset, so no building registered after it was ever
 * applied. The codecs are registered by the composition root (main.ts), so the service runs as its own
 * process, as an operator starts it, against the stack's PostgreSQL, Redis and Kafka. The test's
 * producer sends plain records; the topic's `compression.type` makes the broker compress them.
 */
import pg from 'pg';
import t from 'tap';
import { freshPgDatabase } from './support/database.js';
import { stackRedisUrl, until } from './support/harness.js';
import { compressedTopic } from '../../support/compressed-topic.js';
import { directKafka, produce, stackBrokers, uniqueName } from './support/kafka.js';
import { listeningPort, runScript as run } from './support/process.js';

/** Covers migrations and a consumer group joining on a loaded machine; asserts nothing about speed. */
const APPLIED_WITHIN_MS = 90_000;
const CRASHED = /^.*"msg":"registration consumer crashed; reconnecting".*$/m;

for (const codec of ['snappy', 'lz4', 'zstd']) {
  t.test(`a registration the broker stored ${codec}-compressed is applied, and the consumer does not crash`, async (t) => {
    const databaseUrl = await freshPgDatabase(t);
    const topic = await compressedTopic(t, directKafka('telemetry-test'), uniqueName(`registrations-${codec}`), codec);
    const buildingId = uniqueName('b');
    await produce(topic, [{ buildingId, rooms: ['lobby', 'lab'] }]);

    const suffix = uniqueName('compressed');
    const service = run('cloud/telemetry/main.ts', [], {
      PORT: '0',
      DATABASE_URL: databaseUrl,
      REDIS_URL: stackRedisUrl(),
      KAFKA_BROKERS: stackBrokers().join(','),
      INGEST_SIGNING_SECRET: 'compressed-registrations-secret',
      ALERTS_TOPIC: `${suffix}-alerts`,
      REGISTRATIONS_TOPIC: topic,
      REGISTRATIONS_GROUP: suffix,
      RAW_CHANNEL: `${suffix}:raw`,
      FILTERED_CHANNEL_PREFIX: `${suffix}:filtered:`,
    });
    t.teardown(() => {
      if (service.child.exitCode === null) service.child.kill('SIGKILL');
    });
    t.ok(await listeningPort(service), 'listening');

    const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
    t.teardown(() => pool.end());
    const rooms = async () => (await pool.query<{ room_id: string }>('SELECT room_id FROM rooms WHERE building_id = $1 ORDER BY room_id', [buildingId])).rows.map((r) => r.room_id);
    // The rooms table exists once the service migrated, before it listens.
    await until(async () => CRASHED.test(service.out()) || (await rooms()).length > 0, APPLIED_WITHIN_MS, 'the registration to be applied, or the consumer to crash');
    t.equal(CRASHED.exec(service.out())?.[0], undefined, 'the consumer did not crash on the compressed batch');
    t.same(await rooms(), ['lab', 'lobby'], 'the building and its rooms are stored');

    service.child.kill('SIGTERM');
    t.equal(await service.exited, 0, 'SIGTERM stops it cleanly');
  });
}
