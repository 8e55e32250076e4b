/**
 * Test support for the relay: a real relay on 127.0.0.1 port 0, subscribed to real Redis on channels
 * unique to the test, a fake building directory, real socket.io-client clients and /metrics scraping.
 */
import { randomUUID } from 'node:crypto';
import { stackEnv, uniqueName, type Teardown } from '../../../support/stack.js';
import { Redis } from 'ioredis';
import { io as connect, type Socket as ClientSocket } from 'socket.io-client';
import { request } from 'undici';
import { encodeClaims, type MembershipClaim } from '../../../../shared/claims.js';
import { relayDirectory } from '../../../../cloud/relay/directory.js';
import { silentLogger, type Logger } from '../../../../shared/logger.js';
import { createRegistry } from '../../../../shared/prom.js';
import type { Clock } from '../../../../shared/ttl-cache.js';
import { createRelay, type Relay } from '../../../../cloud/relay/app.js';
import { RedisSubscriber } from '../../../../cloud/relay/redis-subscriber.js';
import { telemetryPattern, type BrokerChannels } from '../../../../cloud/relay/routing.js';
import type { Random } from '../../../../cloud/relay/lifetime.js';
import { startFakeDirectory, type FakeDirectory } from '../../../support/fake-directory.js';
import { capturedLogger as capturedServiceLogger, type LogLine } from '../../../support/captured-logger.js';

export { uniqueName, type Teardown };

/** The shared stack's Redis (tools/stack). */
export function stackRedisUrl(): string {
  return stackEnv().REDIS_URL;
}

export const FRONTEND_ORIGIN = 'http://localhost:5173';

export interface RelayUnderTest {
  relay: Relay;
  url: string;
  channels: BrokerChannels;
  broker: RedisSubscriber;
  /** The clock the directory cache reads; move it with `advance`. */
  advance(ms: number): void;
}

export interface RelayHarnessOptions {
  /** The building directory: a fake, or just a base URL (e.g. one nothing listens on). */
  directory: Pick<FakeDirectory, 'url'>;
  redisUrl?: string;
  maxLifetimeMs?: number;
  random?: Random;
  directoryTimeoutMs?: number;
  logger?: Logger;
  waitForBroker?: boolean;
  heartbeatMs?: number;
  setupTimeoutMs?: number;
}

/** Starts a relay for one test file; stopped at teardown. */
export async function startRelay(t: Teardown, options: RelayHarnessOptions): Promise<RelayUnderTest> {
  let now = Date.now();
  const clock: Clock = () => now;
  const channels: BrokerChannels = { notifications: uniqueName('notifications'), telemetryPrefix: `${uniqueName('telemetry:filtered')}:` };
  const logger = options.logger ?? silentLogger();
  const broker = new RedisSubscriber({
    url: options.redisUrl ?? stackRedisUrl(),
    channels: [channels.notifications],
    patterns: [telemetryPattern(channels)],
    logger,
    ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
    ...(options.setupTimeoutMs === undefined ? {} : { setupTimeoutMs: options.setupTimeoutMs }),
  });
  const relay = createRelay(
    {
      directory: relayDirectory(options.directory.url, { clock, ...(options.directoryTimeoutMs === undefined ? {} : { timeoutMs: options.directoryTimeoutMs }) }),
      broker,
      registry: createRegistry('relay', { defaults: false }),
      logger,
    },
    { frontendOrigin: FRONTEND_ORIGIN, maxLifetimeMs: options.maxLifetimeMs ?? 900_000, channels, ...(options.random ? { random: options.random } : {}) },
  );
  const port = await relay.start(0, '127.0.0.1');
  t.teardown(() => relay.stop());
  if (options.waitForBroker !== false) await broker.subscribed();
  return {
    relay,
    url: `http://127.0.0.1:${port}`,
    channels,
    broker,
    advance(ms) {
      now += ms;
    },
  };
}

/** A real (redacting) relay logger whose JSON lines are kept, so tests can read what reached the log. */
export function capturedLogger(level = 'info'): { logger: Logger; lines: LogLine[] } {
  return capturedServiceLogger('relay', level);
}

/** A publisher on Redis, quit at teardown. */
export function publisher(t: Teardown, url = stackRedisUrl()): Redis {
  const redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
  t.teardown(() => redis.quit().catch(() => redis.disconnect()));
  return redis;
}

export interface Account {
  sub: string;
  accountName?: string;
  domains: string[];
}

/** The header the mesh would inject for an account. */
export function claimsOf(account: Account): string {
  const memberships: MembershipClaim[] = account.domains.map((domainName) => ({ domainName, role: 'viewer' }));
  return encodeClaims({ sub: account.sub, ...(account.accountName ? { accountName: account.accountName } : {}), memberships });
}

export interface Client {
  socket: ClientSocket;
  notifications: unknown[];
  telemetry: unknown[];
}

/** Opens a socket.io-client with a claims header (or none); resolves once connected. */
export async function connectClient(t: Teardown, url: string, header: string | undefined, extra: Record<string, string> = {}): Promise<Client> {
  const socket = openSocket(t, url, header, extra);
  const client: Client = { socket, notifications: [], telemetry: [] };
  socket.on('notification', (n: unknown) => client.notifications.push(n));
  socket.on('telemetry', (r: unknown) => client.telemetry.push(r));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', (err) => reject(err));
  });
  return client;
}

/** Opens a socket and resolves with the connect_error message it gets. Rejects if it connects. */
export async function rejectionOf(t: Teardown, url: string, header: string | undefined, options: { namespace?: string; extraHeaders?: Record<string, string> } = {}): Promise<string> {
  const socket = openSocket(t, `${url}${options.namespace ?? ''}`, header, options.extraHeaders ?? {});
  return new Promise((resolve, reject) => {
    socket.once('connect', () => reject(new Error('connected, expected a rejection')));
    socket.once('connect_error', (err) => resolve(err.message));
  });
}

function openSocket(t: Teardown, url: string, header: string | undefined, extra: Record<string, string>): ClientSocket {
  const socket = connect(url, {
    transports: ['websocket'],
    reconnection: false,
    forceNew: true,
    extraHeaders: { ...(header === undefined ? {} : { 'x-gateway-claims': header }), ...extra },
  });
  t.teardown(() => {
    socket.close();
  });
  return socket;
}

export interface Ack {
  subscribed: boolean;
  buildingId: string;
  reason?: string;
}

/** subscribe_building, waiting for the acknowledgement. */
export function subscribe(client: Client, buildingId: unknown): Promise<Ack> {
  return client.socket.timeout(10_000).emitWithAck('subscribe_building', buildingId) as Promise<Ack>;
}

/** Polls until `condition` holds, or fails after `timeoutMs` with `what`. */
export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** GET /metrics, parsed into `name{label="v",…}` → value, without the service label. */
export async function scrapeMetrics(url: string): Promise<Map<string, number>> {
  const response = await request(`${url}/metrics`);
  const text = await response.body.text();
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = (m[2] ?? '')
      .split(/,(?=[a-zA-Z_]\w*=")/)
      .filter((l) => l !== '' && !l.startsWith('service='))
      .sort();
    series.set(labels.length > 0 ? `${m[1]}{${labels.join(',')}}` : (m[1] as string), Number(m[3]));
  }
  return series;
}

/** One series' value from /metrics; throws when the series does not exist. */
export async function metric(url: string, key: string): Promise<number> {
  const series = await scrapeMetrics(url);
  const value = series.get(key);
  if (value === undefined) throw new Error(`no series ${key} in /metrics`);
  return value;
}

/** A notification of the shared schema. */
export function notification(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: randomUUID(),
    kind: 'alert',
    severity: 'warning',
    title: 'CO2 high',
    message: 'Room 1 is above 1000 ppm',
    buildingId: 'b1',
    createdAt: new Date().toISOString(),
    ...overrides,
  };
}

/**
 * A relay (its log in `lines`) with a building of its own, whose directory answer is one domain, `acme`;
 * `header` is a member's claims, and `redis` publishes.
 */
export async function buildingOnRelay(t: Teardown) {
  const directory = await startFakeDirectory(t);
  const { logger, lines } = capturedLogger();
  const relay = await startRelay(t, { directory, logger });
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  directory.set(building, [acme]);
  return { relay, lines, directory, redis: publisher(t), acme, building, header: claimsOf({ sub: uniqueName('ana'), domains: [acme] }) };
}
