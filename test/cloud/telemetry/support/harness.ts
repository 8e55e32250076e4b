/**
 * The telemetry app on 127.0.0.1 port 0, built from the real adapters: a fresh PostgreSQL database,
 * the stack's Redis with channel names unique to the test, a fake building directory, the shipped
 * device bindings, and a clock the test moves by hand.
 */
import { Redis } from 'ioredis';
import type pg from 'pg';
import { request } from 'undici';
import { createApp } from '../../../../cloud/telemetry/app.js';
import { createRedisPublisher, type ChannelNames } from '../../../../cloud/telemetry/broker/redis-publisher.js';
import type { IngestKeyScope } from '../../../../cloud/telemetry/domain/building-scope.js';
import { createIngestService, type IngestService } from '../../../../cloud/telemetry/ingest.js';
import { createTelemetryMetrics, type TelemetryMetrics } from '../../../../cloud/telemetry/metrics.js';
import { createSigningKeys } from '../../../../cloud/telemetry/signing-keys.js';
import { PgBuildingStore } from '../../../../cloud/telemetry/store/buildings.js';
import { PgIngestKeyStore } from '../../../../cloud/telemetry/store/ingest-keys.js';
import { PgReadingsStore } from '../../../../cloud/telemetry/store/readings.js';
import { PgThresholdStore } from '../../../../cloud/telemetry/store/thresholds.js';
import { encodeClaims, type MembershipClaim } from '../../../../shared/claims.js';
import { createDeviceAdapter } from '../../../../shared/devices/adapter.js';
import { loadBindingCatalog } from '../../../../shared/devices/bindings.js';
import { createBuildingDirectory } from '../../../../shared/directory.js';
import { sign } from '../../../../shared/hmac.js';
import { silentLogger, type Logger } from '../../../../shared/logger.js';
import { serve } from '../../../support/http.js';
import { stackEnv, uniqueName } from '../../../support/stack.js';
import { migratedPool } from './database.js';
import { startFakeDirectory, type FakeDirectory } from '../../../support/fake-directory.js';

export const SHARED_SECRET = 'shared-ingest-secret-0123456789';
export const PREVIOUS_SECRET = 'previous-ingest-secret-98765432';
/** The shared ring as the ingest service sees it: batch ids in the '' scope, any building. */
export const SHARED_KEY: IngestKeyScope = { keyId: '', buildings: 'any' };

interface Tap {
  teardown(fn: () => unknown): void;
}

export interface Harness {
  url: string;
  pool: pg.Pool;
  redisUrl: string;
  channels: ChannelNames;
  directory: FakeDirectory;
  clock: { now: number };
  metrics: TelemetryMetrics;
  ingest: IngestService;
  readings: PgReadingsStore;
  buildings: PgBuildingStore;
  keys: PgIngestKeyStore;
  /** How many times ingest nudged the alert relay. */
  nudges: { count: number };
}

export function stackRedisUrl(): string {
  return stackEnv().REDIS_URL;
}

export interface HarnessOptions {
  timeZone?: string;
  now?: number;
  /** A database the test prepared and migrated itself (and ends itself); a fresh one otherwise. */
  pool?: pg.Pool;
  /** The client readings are published with (the test closes it); a client of the stack's Redis otherwise. */
  redis?: Redis;
  maxPublishingBytes?: number;
  logger?: Logger;
  /** How long a looked-up X-Key-Id is trusted, on the harness clock; 0 (every request looks it up) otherwise. */
  keyCacheTtlMs?: number;
  /** The pool X-Key-Id lookups use (one the test can cut off from PostgreSQL); the harness pool otherwise. */
  keyLookupPool?: pg.Pool;
}

export async function startHarness(t: Tap, options: HarnessOptions = {}): Promise<Harness> {
  // First: it fails the test at teardown on a call it was not set up for, which must skip no cleanup.
  const directory = await startFakeDirectory(t);
  const pool = options.pool ?? (await migratedPool(t, options.timeZone ? { timeZone: options.timeZone } : {}));
  let redis = options.redis;
  if (redis === undefined) {
    const own = new Redis(stackRedisUrl(), { maxRetriesPerRequest: 1 });
    t.teardown(() => own.quit());
    redis = own;
  }
  const prefix = `${uniqueName('telemetry')}:`;
  const channels: ChannelNames = { raw: `${prefix}telemetry:raw`, filteredPrefix: `${prefix}telemetry:filtered:` };
  const clock = { now: options.now ?? Date.now() };
  const metrics = createTelemetryMetrics({ defaults: false });
  const logger = options.logger ?? silentLogger();
  const readings = new PgReadingsStore(pool);
  const buildings = new PgBuildingStore(pool);
  const keys = new PgIngestKeyStore(pool);
  const nudges = { count: 0 };
  const ingest = createIngestService({
    store: readings,
    publisher: createRedisPublisher(redis, channels),
    onAlerts: () => void nudges.count++,
    metrics,
    logger,
    clock: () => clock.now,
    ...(options.maxPublishingBytes !== undefined ? { maxPublishingBytes: options.maxPublishingBytes } : {}),
  });
  t.teardown(() => ingest.drain());
  const app = createApp({
    ingest,
    keys: createSigningKeys({
      shared: [SHARED_SECRET, PREVIOUS_SECRET],
      store: options.keyLookupPool ? new PgIngestKeyStore(options.keyLookupPool) : keys,
      cacheTtlMs: options.keyCacheTtlMs ?? 0,
      clock: () => clock.now,
    }),
    thresholds: new PgThresholdStore(pool),
    buildings,
    directory: createBuildingDirectory({ baseUrl: directory.url, cacheTtlMs: 0 }),
    devices: createDeviceAdapter({ catalog: await loadBindingCatalog(), sensors: buildings, timeoutMs: 2000 }),
    catalog: await loadBindingCatalog(),
    metrics,
    logger,
  });
  const { url } = await serve(t, app);
  return { url, pool, redisUrl: stackRedisUrl(), channels, directory, clock, metrics, ingest, readings, buildings, keys, nudges };
}

export interface Answer {
  status: number;
  contentType: string;
  text: string;
  json: unknown;
}

/** Any request; the answer read whole. */
export async function call(url: string, method: string, body?: string | Buffer, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await request(url, { method: method as 'POST', headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.body.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, contentType: String(res.headers['content-type'] ?? ''), text, json };
}

/** POST /ingest with a body signed by `secret` (the shared key by default). */
export function postSigned(h: Harness, body: unknown, options: { secret?: string; keyId?: string; path?: string } = {}): Promise<Answer> {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-signature': sign(text, options.secret ?? SHARED_SECRET) };
  if (options.keyId) headers['x-key-id'] = options.keyId;
  return call(`${h.url}${options.path ?? '/ingest'}`, 'POST', text, headers);
}

/** A JSON request carrying claims. */
export function callAs(h: Harness, claims: { sub: string; memberships?: MembershipClaim[] }, method: string, path: string, body?: unknown): Promise<Answer> {
  const headers: Record<string, string> = { 'x-gateway-claims': encodeClaims(claims) };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return call(`${h.url}${path}`, method, body === undefined ? undefined : JSON.stringify(body), headers);
}

export async function countRows(pool: pg.Pool, table: string): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
  return Number(rows[0]?.n ?? 0);
}

/** Readings of one kind, for building test batches. */
export function temperatureReading(buildingId: string, roomId: string, timestamp: number, temperature: number, extra: Record<string, unknown> = {}) {
  return { type: 'temperature', buildingId, roomId, timestamp, temperature, ...extra };
}

export function peopleReading(buildingId: string, roomId: string, timestamp: number, peopleCount: number) {
  return { type: 'peopleCount', buildingId, roomId, timestamp, peopleCount };
}

/** Subscribes to channels on a dedicated connection; `messages` fills as they arrive. */
export async function subscribe(t: Tap, redisUrl: string, channels: string[]): Promise<Array<{ channel: string; message: unknown }>> {
  const sub = new Redis(redisUrl);
  t.teardown(() => sub.quit());
  const messages: Array<{ channel: string; message: unknown }> = [];
  sub.on('message', (channel: string, message: string) => messages.push({ channel, message: JSON.parse(message) }));
  await sub.subscribe(...channels);
  return messages;
}

/** Polls `check` until it returns true, at most `ms`. */
export async function until(check: () => boolean | Promise<boolean>, ms = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
