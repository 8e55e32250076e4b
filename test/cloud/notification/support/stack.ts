/**
 * Per-test isolation on the local servers (`bash tools/stack up`), on top of test/support/stack.ts: a
 * database of its own with a client, unique Kafka topics and groups, Redis key prefixes and channels.
 * Everything is removed at teardown.
 */
import { Redis } from 'ioredis';
import '../../../../shared/kafkajs-idle-loop.js';
import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import { MongoClient, type Db } from 'mongodb';
import { freshMongoUri, stackEnv, uniqueName, type Teardown } from '../../../support/stack.js';

export { uniqueName, type Teardown };

const env = stackEnv();
export const STACK = {
  redisUrl: env.REDIS_URL,
  kafkaBrokers: env.KAFKA_BROKERS.split(','),
};

/** A database of its own (dropped at teardown), with a connected client (closed at teardown). */
export async function freshMongo(t: Teardown): Promise<{ client: MongoClient; db: Db; uri: string }> {
  const uri = await freshMongoUri(t);
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 10_000 });
  await client.connect();
  t.teardown(() => client.close());
  return { client, db: client.db(), uri };
}

/** A Redis client closed at teardown. */
export function redisClient(t: Teardown, options: { autoPipelining?: boolean } = {}): Redis {
  const redis = new Redis(STACK.redisUrl, { enableAutoPipelining: options.autoPipelining ?? true });
  t.teardown(() => redis.quit().catch(() => redis.disconnect()));
  return redis;
}

/**
 * A client logged in as a Redis user of its own that may touch only the keys matching `keyPatterns`
 * (ACL `~pattern`s): a real refusal (NOPERM) for the others. Answers the client and the user's name (to
 * change its rights with `admin`). The user is deleted and the client closed at teardown.
 */
export async function restrictedRedis(t: Teardown, admin: Redis, keyPatterns: readonly string[]): Promise<{ client: Redis; user: string }> {
  const user = uniqueName('notif-acl');
  await admin.call('ACL', 'SETUSER', user, 'on', '>pw', '+@all', ...keyPatterns.map((pattern) => `~${pattern}`));
  t.teardown(() => admin.call('ACL', 'DELUSER', user));
  const restricted = new Redis(STACK.redisUrl, { username: user, password: 'pw' });
  t.teardown(() => restricted.quit().catch(() => restricted.disconnect()));
  return { client: restricted, user };
}

/** Deletes every key under a prefix (never FLUSHALL: other test files share the server). */
export async function deleteKeys(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
}

/** Subscribes to a channel and keeps every message, parsed as JSON. */
export async function channelRecorder(t: Teardown, channel: string): Promise<{ messages: unknown[]; raw: string[] }> {
  const subscriber = new Redis(STACK.redisUrl);
  const raw: string[] = [];
  const messages: unknown[] = [];
  subscriber.on('message', (from: string, message: string) => {
    if (from !== channel) return;
    raw.push(message);
    messages.push(JSON.parse(message));
  });
  await subscriber.subscribe(channel);
  t.teardown(() => subscriber.quit().catch(() => subscriber.disconnect()));
  return { messages, raw };
}

export function kafka(): Kafka {
  return new Kafka({ clientId: uniqueName('notif-test'), brokers: STACK.kafkaBrokers, logLevel: logLevel.NOTHING });
}

/** A fresh topic with `partitions` partitions, deleted at teardown, and an admin client. */
export async function freshTopic(t: Teardown, prefix: string, partitions: number): Promise<{ topic: string; admin: Admin }> {
  const admin = kafka().admin();
  await admin.connect();
  const topic = uniqueName(prefix);
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }], waitForLeaders: true });
  t.teardown(async () => {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
  });
  return { topic, admin };
}

/** A connected producer, disconnected at teardown. */
export async function producer(t: Teardown): Promise<Producer> {
  const p = kafka().producer({ allowAutoTopicCreation: false });
  await p.connect();
  t.teardown(() => p.disconnect());
  return p;
}

/** Polls until `check` returns a value that is not undefined/false, or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
