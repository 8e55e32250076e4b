/**
 * Composition root of the telemetry service: read the environment, create the clients, wire the
 * service, and stop cleanly on SIGTERM/SIGINT.
 *
 *   PORT=3000 DATABASE_URL=postgres://… REDIS_URL=redis://… KAFKA_BROKERS=host:9092 \
 *   DIGITAL_TWIN_URL=http://twin:3000 INGEST_SIGNING_SECRET=current,previous PRIVACY_FLOOR=5 npm run telemetry
 */
import { Redis } from 'ioredis';
import '../../shared/kafkajs-idle-loop.js';
// Registered for the whole process, so the registrations consumer reads Snappy, LZ4 and ZSTD batches.
import '../../shared/kafka-codecs.js';
import { Kafka } from 'kafkajs';
import { openPgPool, reachPostgres } from '../../shared/pg-pool.js';
import { loadBindingCatalog } from '../../shared/devices/bindings.js';
import { createBuildingDirectory } from '../../shared/directory.js';
import { readEnv } from '../../shared/env.js';
import { describeError } from '../../shared/describe-error.js';
import { configOrExit, runUntilSignal } from '../../shared/lifecycle.js';
import { createLogger } from '../../shared/logger.js';
import { kafkaLogCreator } from './broker/kafka-log.js';
import { PUBLISHING_REDIS_OPTIONS } from './broker/redis-publisher.js';
import { TELEMETRY_ENV } from './config.js';
import { TelemetryService } from './service.js';

async function main(): Promise<void> {
  const env = configOrExit(() => readEnv(TELEMETRY_ENV));
  const logger = createLogger('telemetry', { level: env.LOG_LEVEL });
  const catalog = await loadBindingCatalog();

  const pool = openPgPool(env.DATABASE_URL, { max: 20, logger });

  // Bounded calls: a Redis that stops answering fails publications (and the stop's drain) in 2 s.
  const redis = new Redis(env.REDIS_URL, PUBLISHING_REDIS_OPTIONS);
  let redisDown = false;
  redis.on('error', (err) => {
    if (!redisDown) logger.warn({ error: describeError(err) }, 'Redis unavailable; readings are stored but not published until it is back');
    redisDown = true;
  });
  redis.on('ready', () => {
    if (redisDown) logger.info('Redis is back');
    redisDown = false;
  });

  const kafka = new Kafka({ clientId: 'telemetry', brokers: env.KAFKA_BROKERS, connectionTimeout: 3000, logCreator: kafkaLogCreator(logger) });
  const directory = createBuildingDirectory({ baseUrl: env.DIGITAL_TWIN_URL, timeoutMs: 2000, cacheTtlMs: 15 * 60_000 });

  const service = new TelemetryService(
    {
      port: env.PORT,
      privacyFloor: env.PRIVACY_FLOOR,
      sharedKeys: env.INGEST_SIGNING_SECRET,
      alertsTopic: env.ALERTS_TOPIC,
      registrationsTopic: env.REGISTRATIONS_TOPIC,
      registrationsGroup: env.REGISTRATIONS_GROUP,
      channels: { raw: env.RAW_CHANNEL, filteredPrefix: env.FILTERED_CHANNEL_PREFIX },
    },
    { pool, redis, kafka, directory, catalog, logger, clock: Date.now },
  );
  await runUntilSignal(
    {
      start: async () => {
        await reachPostgres(pool, env.DATABASE_URL);
        await service.start();
      },
      stop: () => service.stop(),
    },
    logger,
  );
}

main().catch((err) => {
  process.stderr.write(`telemetry failed to start: ${describeError(err)}\n`);
  process.exit(1);
});
