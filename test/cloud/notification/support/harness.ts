/**
 * Wires the notification service the way main.ts does, on the local stack, with isolated names: a fresh
 * database, a unique channel and cooldown prefix, and the given directory and push keys. Plain-http push
 * endpoints are accepted (at /subscribe and by the push sender), and so are private destinations, unless
 * a test turns them off.
 */
import { createECDH, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { Redis } from 'ioredis';
import type { Db } from 'mongodb';
import { request } from 'undici';
import webpush from 'web-push';
import { encodeClaims, systemClaims, type MembershipClaim } from '../../../../shared/claims.js';
import { createBuildingDirectory } from '../../../../shared/directory.js';
import { closeServer, listen } from '../../../../shared/lifecycle.js';
import { silentLogger, type Logger } from '../../../../shared/logger.js';
import { createApp } from '../../../../cloud/notification/app.js';
import { BreachHandler } from '../../../../cloud/notification/breach.js';
import { Semaphore } from '../../../../cloud/notification/concurrency.js';
import { Delivery } from '../../../../cloud/notification/delivery.js';
import { KafkaAlertConsumer } from '../../../../cloud/notification/kafka.js';
import { createMetrics, type NotificationMetrics } from '../../../../cloud/notification/metrics.js';
import { WebPushSender, type VapidKeys } from '../../../../cloud/notification/push.js';
import { RedisCooldown, RedisPublisher, type Cooldown } from '../../../../cloud/notification/redis.js';
import { MongoNotificationStore } from '../../../../cloud/notification/store.js';
import type { FakeDirectory } from './fake-directory.js';
import { STACK, deleteKeys, freshMongo, redisClient, uniqueName, type Teardown } from './stack.js';
import { jsonOrText } from '../../../support/http.js';

export function newVapid(): VapidKeys {
  const keys = webpush.generateVAPIDKeys();
  return { subject: 'mailto:alerts@lintel.invalid', publicKey: keys.publicKey, privateKey: keys.privateKey };
}

export interface Harness {
  url: string;
  db: Db;
  store: MongoNotificationStore;
  metrics: NotificationMetrics;
  delivery: Delivery;
  breach: BreachHandler;
  channel: string;
  keyPrefix: string;
  vapid: VapidKeys | undefined;
  /** A consumer-group member running this instance's breach path; stopped at teardown. */
  consumer(options: { topic: string; groupId: string; partitionsConsumedConcurrently?: number }): Promise<KafkaAlertConsumer>;
}

export interface HarnessOptions {
  directory: FakeDirectory;
  /** null: no VAPID keys (push not configured). Default: a fresh pair. */
  vapid?: VapidKeys | null;
  /** Share a database, channel and cooldown prefix with another instance (a second replica). */
  shared?: { db: Db; channel: string; keyPrefix: string };
  /** Wraps the real cooldown (fault injection); a cooldown of its own gets the instance's replica id. */
  cooldown?: (real: Cooldown, replicaId: string) => Cooldown;
  /** The client the cooldown and the publisher use (one through a proxy). Default one of the stack's Redis. */
  redis?: Redis;
  /** The client in-app notifications are published with (a restricted Redis user). Default the harness's. */
  publishWith?: Redis;
  logger?: Logger;
  /**
   * WEB_PUSH_ALLOW_PRIVATE_DESTINATIONS. Default true: web-push-testing and the status endpoints of the
   * tests listen on loopback.
   */
  allowPrivateDestinations?: boolean;
  /** WEB_PUSH_ALLOW_HTTP. Default true: the push services of the tests listen on plain http. */
  allowHttp?: boolean;
  /** The delivery's bound on push fan-outs in the background (`DeliveryDeps.maxBackground`). */
  maxBackground?: number;
}

export async function startHarness(t: Teardown, options: HarnessOptions): Promise<Harness> {
  const logger = options.logger ?? silentLogger();
  const db = options.shared?.db ?? (await freshMongo(t)).db;
  const channel = options.shared?.channel ?? uniqueName('notifications');
  const keyPrefix = options.shared?.keyPrefix ?? `${uniqueName('notif-test')}:`;
  const stackRedis = redisClient(t);
  if (!options.shared) t.teardown(() => deleteKeys(stackRedis, keyPrefix));
  const redis = options.redis ?? stackRedis;
  // Each instance is a replica of its own, as separate processes would be.
  const replicaId = uniqueName('replica');
  const vapid = options.vapid === null ? undefined : (options.vapid ?? newVapid());
  const metrics = createMetrics({ defaults: false });
  const store = new MongoNotificationStore(db, { recipientsCacheMs: 0 });
  await store.start();
  const allowPrivateDestinations = options.allowPrivateDestinations ?? true;
  const allowHttp = options.allowHttp ?? true;
  const push = new WebPushSender({ vapid, timeoutMs: 2000, allowHttp, allowPrivateDestinations });
  t.teardown(() => push.close());
  const delivery = new Delivery({
    publisher: new RedisPublisher(options.publishWith ?? redis, { channel, keyPrefix, replicaId }),
    store,
    push,
    pushPool: new Semaphore(8),
    metrics,
    logger,
    maxBackground: options.maxBackground,
  });
  t.teardown(() => delivery.drain());
  const realCooldown = new RedisCooldown(redis, { keyPrefix, replicaId });
  const breach = new BreachHandler({
    cooldown: options.cooldown ? options.cooldown(realCooldown, replicaId) : realCooldown,
    directory: createBuildingDirectory({ baseUrl: options.directory.url, timeoutMs: 2000, cacheTtlMs: 15 * 60 * 1000 }),
    systemClaimsHeader: encodeClaims(systemClaims('notification-service')),
    delivery,
    metrics,
    logger,
  });
  const app = createApp({
    store,
    delivery,
    directory: createBuildingDirectory({ baseUrl: options.directory.url, timeoutMs: 2000, cacheTtlMs: 0 }),
    metrics,
    logger,
    vapidPublicKey: vapid?.publicKey,
    allowHttpPushEndpoints: allowHttp,
    allowPrivatePushDestinations: allowPrivateDestinations,
  });
  const server = createServer(app);
  const port = await listen(server, 0, '127.0.0.1');
  t.teardown(() => closeServer(server));
  return {
    url: `http://127.0.0.1:${port}`,
    db,
    store,
    metrics,
    delivery,
    breach,
    channel,
    keyPrefix,
    vapid,
    async consumer({ topic, groupId, partitionsConsumedConcurrently }) {
      const consumer = new KafkaAlertConsumer({
        brokers: STACK.kafkaBrokers,
        topic,
        groupId,
        partitionsConsumedConcurrently: partitionsConsumedConcurrently ?? 4,
        reconnectMs: 1000,
        lagIntervalMs: 0,
        settle: (records, source) => breach.settle(records, source),
        metrics,
        logger,
      });
      t.teardown(() => consumer.stop());
      await consumer.start();
      return consumer;
    },
  };
}

/** Subscription keys as a browser holds them: web-push can encrypt for them. */
/** An alert record as telemetry produces it: a temperature breach in one room. */
export function temperatureAlert(alertId: string, buildingId: string, roomId: string): Buffer {
  return Buffer.from(JSON.stringify({ alertId, type: 'temperature', field: 'temperature', buildingId, roomId, value: 31, bound: 'maxTemperature', threshold: 28 }));
}

export function browserKeys(): { p256dh: string; auth: string } {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  return { p256dh: ecdh.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') };
}

/** A fresh account (its name starts with `prefix`) that is a member of `domainName`, and its claims header. */
export function member(domainName: string, prefix = 'user'): { account: string; header: string } {
  const account = uniqueName(prefix);
  return { account, header: claims(`sub-${account}`, account, [{ domainName, role: 'member' }]) };
}

/** An encoded claims header. */
export function claims(sub: string, accountName: string | undefined, memberships: MembershipClaim[] = []): string {
  return encodeClaims({ sub, ...(accountName !== undefined ? { accountName } : {}), memberships });
}

/** Calls the app: JSON in, JSON out. */
export async function call(
  base: string,
  method: 'GET' | 'POST',
  path: string,
  options: { claims?: string; body?: unknown; rawBody?: string } = {},
): Promise<{ status: number; body: unknown }> {
  const headers: Record<string, string> = {};
  if (options.claims !== undefined) headers['x-gateway-claims'] = options.claims;
  if (options.body !== undefined || options.rawBody !== undefined) headers['content-type'] = 'application/json';
  const response = await request(`${base}${path}`, {
    method,
    headers,
    body: options.rawBody ?? (options.body !== undefined ? JSON.stringify(options.body) : undefined),
  });
  return { status: response.statusCode, body: jsonOrText(await response.body.text()) };
}

/** A counter's value for one label set. */
export async function counterValue(metrics: NotificationMetrics, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = await metrics.registry.getSingleMetric(name)?.get();
  const match = metric?.values.find((v) => Object.entries(labels).every(([k, value]) => v.labels[k] === value));
  return match?.value ?? 0;
}
