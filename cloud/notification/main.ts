/**
 * Composition root of the notification service: reads the environment, creates the clients, wires the
 * ports, runs until SIGTERM. `npm run notification -- vapid-keys` prints a fresh VAPID key pair.
 */
import { createServer, type Server } from 'node:http';
import { Redis } from 'ioredis';
import { MongoClient, MongoServerError } from 'mongodb';
import webpush from 'web-push';
import { encodeClaims, systemClaims } from '../../shared/claims.js';
import { DependencyUnreachable } from '../../shared/describe-error.js';
import { createBuildingDirectory } from '../../shared/directory.js';
import { ConfigError, hostPorts, int, logLevel, mongoDatabaseOf, mongoUri, readEnv, str, url, type EnvOf, type EnvVar } from '../../shared/env.js';
import { closeServer, configOrExit, listen, runUntilSignal, settlesWithin } from '../../shared/lifecycle.js';
import { createLogger } from '../../shared/logger.js';
import { createApp } from './app.js';
import { BreachHandler } from './breach.js';
import { Semaphore } from './concurrency.js';
import { Delivery } from './delivery.js';
import { KafkaAlertConsumer } from './kafka.js';
import { createMetrics } from './metrics.js';
import { StartupMigration } from './migration.js';
import { WebPushSender, vapidProblems, type VapidKeys } from './push.js';
import { RedisCooldown, RedisPublisher, SERVICE_REDIS_OPTIONS } from './redis.js';
import { MongoNotificationStore, RECORD_LOCK_WAIT_MS } from './store.js';

/** The identity the breach path looks buildings up with. */
export const SERVICE_IDENTITY = 'notification-service';
const LOOKUP_CACHE_MS = 15 * 60 * 1000;
const LOOKUP_TIMEOUT_MS = 2000;

/**
 * The stop sequence, in ms from the signal; the process exits 1 past STOP_DEADLINE_MS. Kafka and HTTP
 * stop at once; the HTTP server closes its connections by itself within about 2 s (`closeServer`). A
 * startup migration still running is told to stop and waited for until the MIGRATION_STOP_MS setting
 * (DEFAULT_MIGRATION_STOP_MS); past it, its lock is released for it, before the database client closes.
 * A consumer not stopped by KAFKA_STOP_MS (a slice waiting out a lookup timeout) is logged, and waited
 * for until DRAIN_UNTIL_MS, since a slice's fan-outs start only when it ends. Push fan-outs run all along
 * and are waited for until DRAIN_UNTIL_MS too. The clients then close by CLIENTS_UNTIL_MS, leaving room
 * for the exit itself. A MIGRATION_STOP_MS setting above its default moves DRAIN_UNTIL_MS,
 * CLIENTS_UNTIL_MS and STOP_DEADLINE_MS out by as much, so the steps after the migration keep their room.
 */
const KAFKA_STOP_MS = 2000;
const DEFAULT_MIGRATION_STOP_MS = 2000;
const DRAIN_UNTIL_MS = 3800;
const CLIENTS_UNTIL_MS = 4300;
const STOP_DEADLINE_MS = 5000;

function bool(options: { default: boolean }): EnvVar<boolean> {
  return {
    read: (raw) => {
      if (raw === undefined || raw === '') return { ok: true, value: options.default };
      if (/^(true|1|yes)$/i.test(raw)) return { ok: true, value: true };
      if (/^(false|0|no)$/i.test(raw)) return { ok: true, value: false };
      return { ok: false, problem: `expected true or false, got ${JSON.stringify(raw)}` };
    },
  };
}

const ENV_SPEC = {
  PORT: int({ default: 3000, min: 0, max: 65535 }),
  MONGO_URI: mongoUri({ default: 'mongodb://127.0.0.1:27017/notificationdb' }),
  REDIS_URL: url(['redis', 'rediss'], { default: 'redis://127.0.0.1:6379' }),
  KAFKA_BROKERS: hostPorts({ default: '127.0.0.1:9092' }),
  DIGITAL_TWIN_URL: url(['http', 'https'], { default: 'http://127.0.0.1:3000' }),
  VAPID_PUBLIC_KEY: str({ optional: true }),
  VAPID_PRIVATE_KEY: str({ optional: true }),
  VAPID_SUBJECT: str({ default: 'mailto:alerts@lintel.invalid' }),
  NOTIFICATIONS_CHANNEL: str({ default: 'notifications' }),
  ALERTS_TOPIC: str({ default: 'alerts' }),
  ALERTS_GROUP: str({ default: 'alerts' }),
  PUSH_CONCURRENCY: int({ default: 16, min: 1, max: 1024 }),
  MIGRATION_STOP_MS: int({ default: DEFAULT_MIGRATION_STOP_MS, min: 0, max: 600_000 }),
  RECORD_LOCK_WAIT_MS: int({ default: RECORD_LOCK_WAIT_MS, min: 0, max: 3_600_000 }),
  WEB_PUSH_ALLOW_HTTP: bool({ default: false }),
  WEB_PUSH_ALLOW_PRIVATE_DESTINATIONS: bool({ default: false }),
  LOG_LEVEL: logLevel(),
};

/** Reads and checks the whole configuration, reporting every problem at once. */
function readConfig(source: NodeJS.ProcessEnv = process.env) {
  const problems: string[] = [];
  let env: EnvOf<typeof ENV_SPEC> | undefined;
  try {
    env = readEnv(ENV_SPEC, source);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems);
  }
  const publicKey = source.VAPID_PUBLIC_KEY ?? '';
  const privateKey = source.VAPID_PRIVATE_KEY ?? '';
  let vapid: VapidKeys | undefined;
  if (publicKey !== '' && privateKey !== '') {
    vapid = { subject: source.VAPID_SUBJECT || 'mailto:alerts@lintel.invalid', publicKey, privateKey };
    problems.push(...vapidProblems(vapid));
  }
  if (problems.length > 0 || !env) throw new ConfigError(problems);
  const database = mongoDatabaseOf(env.MONGO_URI) || 'notificationdb';
  return { ...env, vapid, database };
}

async function main(): Promise<void> {
  if (process.argv[2] === 'vapid-keys') {
    const keys = webpush.generateVAPIDKeys();
    process.stdout.write(`VAPID_PUBLIC_KEY=${keys.publicKey}\nVAPID_PRIVATE_KEY=${keys.privateKey}\n`);
    return;
  }
  const config = configOrExit(() => readConfig());
  const logger = createLogger('notification', { level: config.LOG_LEVEL });
  if (!config.vapid) {
    // Names, not `privateKeySet: true`: the logger redacts every field named like a private key.
    const missing = (['VAPID_PUBLIC_KEY', 'VAPID_PRIVATE_KEY'] as const).filter((name) => !config[name]);
    logger.warn(
      { missing },
      'VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY are not both set: every push will fail and be logged',
    );
  }

  if (config.WEB_PUSH_ALLOW_PRIVATE_DESTINATIONS) {
    logger.warn('WEB_PUSH_ALLOW_PRIVATE_DESTINATIONS is on: pushes may reach loopback and private networks; use it only with local push services');
  }

  const metrics = createMetrics();
  const mongo = new MongoClient(config.MONGO_URI, { serverSelectionTimeoutMS: 10_000 });
  const redis = new Redis(config.REDIS_URL, { ...SERVICE_REDIS_OPTIONS, lazyConnect: true });
  redis.on('error', (err: Error) => logger.error({ error: err.name }, 'redis connection error'));
  const store = new MongoNotificationStore(mongo.db(config.database), { recordLockWaitMs: config.RECORD_LOCK_WAIT_MS });
  const push = new WebPushSender({ vapid: config.vapid, allowHttp: config.WEB_PUSH_ALLOW_HTTP, allowPrivateDestinations: config.WEB_PUSH_ALLOW_PRIVATE_DESTINATIONS });
  const delivery = new Delivery({
    publisher: new RedisPublisher(redis, { channel: config.NOTIFICATIONS_CHANNEL }),
    store,
    push,
    pushPool: new Semaphore(config.PUSH_CONCURRENCY),
    metrics,
    logger,
  });
  const breach = new BreachHandler({
    cooldown: new RedisCooldown(redis),
    // Caching, so the alerts of one building arriving together share one lookup in flight (shared/directory.ts).
    directory: createBuildingDirectory({ baseUrl: config.DIGITAL_TWIN_URL, timeoutMs: LOOKUP_TIMEOUT_MS, cacheTtlMs: LOOKUP_CACHE_MS }),
    systemClaimsHeader: encodeClaims(systemClaims(SERVICE_IDENTITY)),
    delivery,
    metrics,
    logger,
  });
  const consumer = new KafkaAlertConsumer({
    brokers: config.KAFKA_BROKERS,
    topic: config.ALERTS_TOPIC,
    groupId: config.ALERTS_GROUP,
    settle: (records, source) => breach.settle(records, source),
    metrics,
    logger,
  });
  const app = createApp({
    store,
    delivery,
    directory: createBuildingDirectory({ baseUrl: config.DIGITAL_TWIN_URL, timeoutMs: LOOKUP_TIMEOUT_MS, cacheTtlMs: 0 }),
    metrics,
    logger,
    vapidPublicKey: config.vapid?.publicKey,
    allowHttpPushEndpoints: config.WEB_PUSH_ALLOW_HTTP,
    allowPrivatePushDestinations: config.WEB_PUSH_ALLOW_PRIVATE_DESTINATIONS,
  });
  const migration = new StartupMigration(store, logger);
  let server: Server | undefined;
  // Set when the stop begins. A start still under way ends at its next step rather than open what the
  // stop has already passed by: a Redis connection against its quit, a server it never closes.
  let stopping = false;
  const stepsMovedOutMs = Math.max(0, config.MIGRATION_STOP_MS - DEFAULT_MIGRATION_STOP_MS);

  await runUntilSignal(
    {
      async start() {
        await mongo.connect();
        await store.start();
        // Rejects once the stop began, even when the migration's last step finished meanwhile.
        logger.info(await migration.run(), 'startup migration finished');
        if (stopping) return;
        await redis.connect().catch((err: unknown) => {
          throw new DependencyUnreachable('Redis', config.REDIS_URL, err);
        });
        if (stopping) return;
        server = createServer(app);
        const port = await listen(server, config.PORT);
        if (stopping) {
          await closeServer(server);
          return;
        }
        logger.info({ port, database: config.database, topic: consumer.topic, groupId: consumer.groupId }, 'notification service listening');
        // Does nothing once the stop has stopped the consumer.
        await consumer.start();
      },
      async stop() {
        stopping = true;
        const begun = performance.now();
        const until = (ms: number) => ms + stepsMovedOutMs - (performance.now() - begun);
        const [kafkaStopped] = await Promise.all([
          consumer.stop(KAFKA_STOP_MS),
          server ? closeServer(server) : undefined,
          settlesWithin(migration.stop(config.MIGRATION_STOP_MS), until(DRAIN_UNTIL_MS)),
        ]);
        // A slice hands its push fan-outs to the background only once all of it is published: until it
        // ends, pushes of alerts it already published (read again, they are duplicates) are not drainable.
        if (!kafkaStopped) {
          logger.warn('the alert consumer did not stop in time; waiting for the slice it settles as long as for push fan-outs');
          if (!(await consumer.closed(until(DRAIN_UNTIL_MS)))) {
            logger.warn('the alert consumer has still not stopped; records it settled but did not commit will be read again, as duplicates, and pushes it has not handed over are lost');
          }
        }
        if (!(await delivery.drain(until(DRAIN_UNTIL_MS)))) logger.warn('stopping with push fan-outs still running; they are dropped');
        await push.close();
        const redisClosed = settlesWithin(redis.quit(), until(CLIENTS_UNTIL_MS));
        const mongoClosed = settlesWithin(mongo.close(), until(CLIENTS_UNTIL_MS));
        // A quit refused for want of a connection (the client queues nothing) leaves it reconnecting.
        if (!(await redisClosed) || redis.status !== 'end') redis.disconnect();
        if (!(await mongoClosed)) logger.warn('the database connection did not close in time');
      },
    },
    logger,
    STOP_DEADLINE_MS + stepsMovedOutMs,
  );
}

main().catch((err: unknown) => {
  // Driver messages name hosts and ports, which helps; credentials inside a URI are cut out. A server's
  // own error can quote stored values (a duplicate key names the endpoint, a push capability), so it is
  // named by its code only.
  const text =
    err instanceof MongoServerError
      ? `${err.name} (${String(err.codeName ?? err.code)})`
      : err instanceof Error
        ? `${err.name}: ${err.message}`
        : String(err);
  process.stderr.write(`notification service failed to start: ${text.replace(/\/\/[^@/\s]*@/g, '//[redacted]@')}\n`);
  process.exit(1);
});
