/**
 * What the notification benchmark and its Kafka-free diagnostic share: the alerts (50,000 over 5,000
 * cooldown keys, keyed like telemetry's), the building directory in a process of its own, and the
 * service's breach path, built from the parts `cloud/notification/main.ts` builds it from (the Redis
 * cooldown and publisher on a client with the service's options, the coalesced directory lookups, the
 * FerretDB store, Web Push), and the check that a round settled its alerts as it should.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { MongoClient, type Db } from 'mongodb';
import { encodeClaims, systemClaims } from '../../../shared/claims.js';
import { DependencyUnreachable } from '../../../shared/describe-error.js';
import { createBuildingDirectory } from '../../../shared/directory.js';
import { silentLogger } from '../../../shared/logger.js';
import { BreachHandler } from '../../../cloud/notification/breach.js';
import { Semaphore } from '../../../cloud/notification/concurrency.js';
import { Delivery } from '../../../cloud/notification/delivery.js';
import { ALERT_OUTCOMES, createMetrics, type AlertOutcome, type NotificationMetrics } from '../../../cloud/notification/metrics.js';
import { WebPushSender } from '../../../cloud/notification/push.js';
import { RedisCooldown, RedisPublisher, SERVICE_REDIS_OPTIONS } from '../../../cloud/notification/redis.js';
import { MongoNotificationStore } from '../../../cloud/notification/store.js';
import { cpuShares, type CpuMark, type CpuShares } from './cpu-marks.js';

export const ALERTS = 50_000;
const BUILDINGS = 100;
const ROOMS = 50;
/** 100 buildings × 50 rooms. */
export const DISTINCT_KEYS = BUILDINGS * ROOMS;

/** `ALERTS` alerts, each of the `DISTINCT_KEYS` keys `ALERTS / DISTINCT_KEYS` times, shuffled. */
export function alerts(run: string): Array<{ key: string; value: string }> {
  const out: Array<{ key: string; value: string }> = [];
  for (let i = 0; i < ALERTS; i++) {
    const key = i % DISTINCT_KEYS;
    const buildingId = `bench-b${Math.floor(key / ROOMS)}`;
    const roomId = `r${key % ROOMS}`;
    out.push({
      key: `${buildingId}:${roomId}`,
      value: JSON.stringify({ alertId: `${run}-${i}`, type: 'temperature', field: 'temperature', buildingId, roomId, value: 31.5, bound: 'maxTemperature', threshold: 28, timestamp: Date.now() }),
    });
  }
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** A round's throughput, and who used the CPU while it was timed. */
export interface Round {
  rate: number;
  cpu: CpuShares;
}

/** The round of `ALERTS` alerts between two marks: its first record and the moment it was settled. */
export function roundOf(first: CpuMark, last: CpuMark): Round {
  return { rate: ALERTS / ((last.at - first.at) / 1000), cpu: cpuShares(first, last) };
}

/** The round with the highest rate. */
export function fastest<T extends Round>(rounds: readonly T[]): T {
  return rounds.reduce((a, b) => (b.rate > a.rate ? b : a));
}

/**
 * The benchmark's building directory (`directory.ts`) in a process of its own. A directory that exits
 * before it prints its port fails the start: waiting for the line alone would leave nothing to wait
 * on, and Node would end the benchmark with exit code 0 and no figures.
 */
async function startDirectory(): Promise<{ url: string; child: ChildProcess }> {
  const script = fileURLToPath(new URL('./directory.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const first = await Promise.race([
    once(createInterface({ input: child.stdout! }), 'line').then(([line]) => line as string),
    once(child, 'exit').then(() => undefined),
  ]);
  if (first === undefined) throw new Error(`the directory process exited before it printed its port (${child.signalCode ?? `exit code ${child.exitCode}`})`);
  const { port } = JSON.parse(first) as { port: number };
  return { url: `http://127.0.0.1:${port}`, child };
}

export interface ServiceBreach {
  breach: BreachHandler;
  metrics: NotificationMetrics;
  /** How many records were settled with this outcome. */
  outcome(name: AlertOutcome): Promise<number>;
  close(): Promise<void>;
}

/**
 * The breach path of one round: cooldown keys under a prefix of the round's own (so every round starts
 * with none armed), a cold lookup cache, the in-app channel `bench-notifications-{run}`.
 */
export async function serviceBreach(options: { db: Db; redis: Redis; directoryUrl: string; run: string; round: number }): Promise<ServiceBreach> {
  const { db, redis, directoryUrl, run, round } = options;
  const logger = silentLogger();
  const metrics = createMetrics({ defaults: false });
  const store = new MongoNotificationStore(db);
  await store.start();
  const push = new WebPushSender({});
  // The publisher marks the seen marks the cooldown wrote: both under the round's prefix.
  const keyPrefix = `${roundKeyPrefix(run)}${round}:`;
  const delivery = new Delivery({ publisher: new RedisPublisher(redis, { channel: `bench-notifications-${run}`, keyPrefix }), store, push, pushPool: new Semaphore(16), metrics, logger });
  const breach = new BreachHandler({
    cooldown: new RedisCooldown(redis, { keyPrefix }),
    directory: createBuildingDirectory({ baseUrl: directoryUrl, timeoutMs: 2000, cacheTtlMs: 15 * 60 * 1000 }),
    systemClaimsHeader: encodeClaims(systemClaims('notification-service')),
    delivery,
    metrics,
    logger,
  });
  return {
    breach,
    metrics,
    outcome: async (name) => (await metrics.alertsConsumed.get()).values.find((v) => v.labels.outcome === name)?.value ?? 0,
    close: () => push.close(),
  };
}

/** How a round's alerts settle: the first alert of each key delivered, every later one suppressed. */
export interface RoundOutcomes {
  delivered: number;
  suppressed: number;
}

/**
 * The round's outcomes, or an error when they are not the `DISTINCT_KEYS` deliveries and the rest
 * suppressed that a sound round settles. A round whose lookups all failed (the directory died or
 * refused) settles its armed alerts `unroutable` and ends as quickly as a sound one, or more so: its
 * rate measures a failure, not the service, and must not count.
 */
export async function checkedOutcomes(what: string, outcome: ServiceBreach['outcome']): Promise<RoundOutcomes> {
  const counts = new Map(await Promise.all(ALERT_OUTCOMES.map(async (name) => [name, await outcome(name)] as const)));
  const delivered = counts.get('delivered') ?? 0;
  const suppressed = counts.get('suppressed') ?? 0;
  if (delivered !== DISTINCT_KEYS || suppressed !== ALERTS - DISTINCT_KEYS) {
    const settled = [...counts].filter(([, n]) => n > 0).map(([name, n]) => `${n} ${name}`).join(', ') || 'none';
    throw new Error(`${what}: expected ${DISTINCT_KEYS} alerts delivered and ${ALERTS - DISTINCT_KEYS} suppressed, settled ${settled}`);
  }
  return { delivered, suppressed };
}

/** Every round's Redis keys start with this. */
function roundKeyPrefix(run: string): string {
  return `bench-notification-${run}-`;
}

/** Deletes the Redis keys under `prefix`. */
async function deleteByPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
}

/** What a measurement of the breach path works against: the directory, a database of its own on FerretDB, Redis. */
export interface Servers {
  directoryUrl: string;
  directoryPid: number | undefined;
  db: Db;
  redis: Redis;
  /** Deletes the run's Redis keys and its database, and stops the directory. */
  close(): Promise<void>;
}

export async function openServers(run: string, databaseName: string): Promise<Servers> {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:56379';
  const mongoUri = process.env.MONGO_URI ?? 'mongodb://127.0.0.1:57017/lintel';
  const directory = await startDirectory();
  const mongo = new MongoClient(mongoUri.replace(/\/[^/]*$/, `/${databaseName}`));
  try {
    await mongo.connect();
  } catch (err) {
    directory.child.kill('SIGTERM');
    throw err;
  }
  // The service's client, as main.ts builds it: calls time out after 2 s and fail at once without a
  // connection (no offline queue, so it connects before the first call), which costs the breach path
  // what it costs the service.
  const redis = new Redis(redisUrl, { ...SERVICE_REDIS_OPTIONS, lazyConnect: true });
  try {
    await redis.connect();
  } catch (err) {
    redis.disconnect();
    await mongo.close();
    directory.child.kill('SIGTERM');
    throw new DependencyUnreachable('Redis', redisUrl, err);
  }
  return {
    directoryUrl: directory.url,
    directoryPid: directory.child.pid,
    db: mongo.db(databaseName),
    redis,
    async close() {
      await deleteByPrefix(redis, roundKeyPrefix(run));
      await redis.quit();
      await mongo.db(databaseName).dropDatabase().catch(() => undefined);
      await mongo.close();
      directory.child.kill('SIGTERM');
    },
  };
}

/** Runs a measurement's `main` and exits: 0 when it finished, 1 with the reason when it failed. */
export function runToExit(what: string, main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(`${what} failed: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
