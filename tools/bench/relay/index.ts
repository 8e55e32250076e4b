/**
 * Relay benchmark: 2,000 websocket clients in 200 building rooms, telemetry published to Redis.
 *
 * For the relay (the real app, its Redis subscriber and the Socket.IO fan-out) and, as the limit, a
 * bare `ws` server that forwards the same payloads from the same Redis to the same clients:
 * - a fixed-rate phase (20,000 deliveries/s offered): deliveries/s, every delivery over the time from
 *   the start of publishing to the last delivery (a server that falls behind shows it), and
 *   publish→receive latency p50/p99. A delivery still missing 15 s after publishing stopped fails the
 *   benchmark;
 * - saturation rounds, alternating between the two (the publisher keeps a bounded window in flight):
 *   the most deliveries/s each sustains;
 * - memory per connection on the server side.
 * `ratio:` (printed last) is the relay's saturated deliveries/s over the bare server's.
 *
 * Clients live in a child process (tools/bench/relay/clients.ts). Bounded to about a minute.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Redis } from 'ioredis';
import { WebSocketServer, type WebSocket } from 'ws';
import { encodeClaims } from '../../../shared/claims.js';
import { createBuildingDirectory } from '../../../shared/directory.js';
import { closeServer, listen } from '../../../shared/lifecycle.js';
import { silentLogger } from '../../../shared/logger.js';
import { createRegistry } from '../../../shared/prom.js';
import { createRelay } from '../../../cloud/relay/app.js';
import { RedisSubscriber } from '../../../cloud/relay/redis-subscriber.js';
import { telemetryPattern } from '../../../cloud/relay/routing.js';
import type { Command, Reply, ServerKind } from './clients.js';

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 2000);
const ROOMS = Number(process.env.BENCH_ROOMS ?? 200);
const FIXED_DELIVERIES_PER_SEC = Number(process.env.BENCH_RATE ?? 20_000);
const FIXED_SECS = Number(process.env.BENCH_FIXED_SECS ?? 8);
const SATURATION_SECS = Number(process.env.BENCH_SATURATION_SECS ?? 2);
const SATURATION_ROUNDS = Number(process.env.BENCH_SATURATION_ROUNDS ?? 4);
/** Deliveries allowed in flight during saturation: enough to keep both servers busy, bounded for Redis. */
const WINDOW_DELIVERIES = 20_000;
const PER_ROOM = CLIENTS / ROOMS;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function redisUrl(): string {
  if (process.env.REDIS_URL) return process.env.REDIS_URL;
  const file = fileURLToPath(new URL('../../../.stack/env.json', import.meta.url));
  if (existsSync(file)) {
    const env = JSON.parse(readFileSync(file, 'utf8')) as { REDIS_URL?: string };
    if (env.REDIS_URL) return env.REDIS_URL;
  }
  throw new Error('REDIS_URL not set and .stack/env.json not found: run `bash tools/stack up` first');
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const now = () => performance.timeOrigin + performance.now();

/** The child that holds the clients, with a request/reply channel over IPC. */
class ClientFleet {
  delivered = 0;
  private waiting: Array<{ type: Reply['type']; resolve: (reply: Reply) => void; reject: (err: Error) => void }> = [];
  private progressWaiters: Array<() => void> = [];
  constructor(private readonly child: ChildProcess) {
    child.on('message', (reply: Reply) => {
      if (reply.type === 'progress') {
        this.delivered = reply.delivered;
        for (const resolve of this.progressWaiters.splice(0)) resolve();
        return;
      }
      const index = reply.type === 'error' ? 0 : this.waiting.findIndex((w) => w.type === reply.type);
      const waiter = this.waiting.splice(index, 1)[0];
      if (!waiter) return;
      if (reply.type === 'error') waiter.reject(new Error(reply.message));
      else waiter.resolve(reply);
    });
  }
  request<T extends Reply['type']>(command: Command, type: T): Promise<Extract<Reply, { type: T }>> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ type, resolve: resolve as (r: Reply) => void, reject });
      this.child.send(command);
    });
  }
  tell(command: Command): void {
    this.child.send(command);
  }
  nextProgress(): Promise<void> {
    return new Promise((resolve) => this.progressWaiters.push(resolve));
  }
  async untilDelivered(count: number, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.delivered < count) {
      if (Date.now() > deadline) return false;
      await this.nextProgress();
    }
    return true;
  }
}

/** A bare fan-out: one Redis pattern subscription, rooms as sets of sockets, raw payloads forwarded. */
async function startBareServer(url: string, prefix: string): Promise<{ url: string; stop(): Promise<void> }> {
  const server: Server = createServer();
  const wss = new WebSocketServer({ server, perMessageDeflate: false });
  const rooms = new Map<string, Set<WebSocket>>();
  wss.on('connection', (ws, req) => {
    const building = new URL(req.url ?? '/', 'http://x').searchParams.get('building') ?? '';
    let room = rooms.get(building);
    if (!room) rooms.set(building, (room = new Set()));
    room.add(ws);
    ws.on('close', () => room.delete(ws));
  });
  const redis = new Redis(url);
  redis.on('pmessageBuffer', (_pattern: string, channel: Buffer, payload: Buffer) => {
    const room = rooms.get(channel.toString('utf8').slice(prefix.length));
    if (!room) return;
    const text = payload.toString('utf8');
    for (const ws of room) ws.send(text);
  });
  await redis.psubscribe(`${prefix}*`);
  const port = await listen(server, 0, '127.0.0.1');
  return {
    url: `http://127.0.0.1:${port}`,
    async stop() {
      redis.disconnect();
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      await closeServer(server);
    },
  };
}

function memory(): { heap: number; rss: number } {
  gc();
  gc();
  const m = process.memoryUsage();
  return { heap: m.heapUsed + m.external, rss: m.rss };
}

function reading(buildingId: string, seq: number): string {
  return JSON.stringify({ type: 'co2', buildingId, roomId: `r${seq % 12}`, value: 400 + (seq % 600), unit: 'ppm', timestamp: Date.now(), seq, t: now() });
}

interface Target {
  kind: ServerKind;
  url: string;
  prefix: string;
}

/** Connects the clients of one server and returns the server-side memory each connection costs. */
async function connectFleet(target: Target, fleet: ClientFleet, claims: string): Promise<{ heap: number; rss: number }> {
  const before = memory();
  const connected = await fleet.request({ cmd: 'connect', kind: target.kind, url: target.url, clients: CLIENTS, rooms: ROOMS, claims, buildingPrefix: '' }, 'connected');
  if (connected.clients % CLIENTS !== 0) throw new Error(`only ${connected.clients} clients connected`);
  const after = memory();
  return { heap: (after.heap - before.heap) / CLIENTS, rss: (after.rss - before.rss) / CLIENTS };
}

async function settle(fleet: ClientFleet): Promise<void> {
  fleet.tell({ cmd: 'reset' });
  await fleet.nextProgress();
  await fleet.nextProgress();
}

/**
 * Publishes at a fixed rate for `secs`; deliveries/s from the start of publishing to the last delivery,
 * and latency percentiles. Throws when a delivery has not arrived 15 s after publishing stopped: a
 * server that loses deliveries has no rate to report.
 */
async function fixedRate(target: Target, fleet: ClientFleet, publisher: Redis, secs = FIXED_SECS) {
  const messagesPerSec = FIXED_DELIVERIES_PER_SEC / PER_ROOM;
  await settle(fleet);
  let published = 0;
  const start = now();
  while (now() - start < secs * 1000) {
    const due = Math.floor(((now() - start) / 1000) * messagesPerSec) - published;
    if (due > 0) {
      const pipeline = publisher.pipeline();
      for (let i = 0; i < due; i++, published++) {
        const room = published % ROOMS;
        pipeline.publish(`${target.prefix}${room}`, reading(`b${room}`, published));
      }
      await pipeline.exec();
    }
    await sleep(5);
  }
  const expected = published * PER_ROOM;
  const complete = await fleet.untilDelivered(expected, 15_000);
  const report = await fleet.request({ cmd: 'report' }, 'report');
  const lost = complete ? 0 : expected - report.delivered;
  if (lost > 0) throw new Error(`${target.kind}: ${lost} of ${expected} deliveries at the fixed rate had not arrived 15 s after publishing stopped`);
  // Until the last delivery, not until publishing stopped: a server behind the offered rate shows it.
  const elapsed = (report.lastDeliveryAt - start) / 1000;
  return { deliveriesPerSec: expected / elapsed, p50: report.p50, p99: report.p99, lost };
}

/** Keeps WINDOW_DELIVERIES in flight for `secs`: the most deliveries/s the server sustains. */
async function saturate(target: Target, fleet: ClientFleet, publisher: Redis, secs: number): Promise<number> {
  await settle(fleet);
  let sent = 0;
  const start = now();
  while (now() - start < secs * 1000) {
    const room = WINDOW_DELIVERIES - (sent * PER_ROOM - fleet.delivered);
    const batch = Math.min(500, Math.floor(room / PER_ROOM));
    if (batch <= 0) {
      await fleet.nextProgress();
      continue;
    }
    const pipeline = publisher.pipeline();
    for (let i = 0; i < batch; i++, sent++) pipeline.publish(`${target.prefix}${sent % ROOMS}`, reading(`b${sent % ROOMS}`, sent));
    await pipeline.exec();
  }
  const delivered = fleet.delivered;
  const elapsed = (now() - start) / 1000;
  await fleet.untilDelivered(sent * PER_ROOM, 15_000);
  return delivered / elapsed;
}

async function main(): Promise<void> {
  const url = redisUrl();
  const run = randomBytes(4).toString('hex');
  const relayPrefix = `bench:relay:${run}:telemetry:filtered:`;
  const barePrefix = `bench:bare:${run}:telemetry:filtered:`;
  const domain = `bench-${run}`;
  const claims = encodeClaims({ sub: `bench-${run}`, accountName: 'bench@lintel.test', memberships: [{ domainName: domain, role: 'viewer' }] });

  const directoryServer = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify([domain])));
  const directoryPort = await listen(directoryServer, 0, '127.0.0.1');
  const broker = new RedisSubscriber({
    url,
    channels: [`bench:relay:${run}:notifications`],
    patterns: [telemetryPattern({ notifications: '', telemetryPrefix: relayPrefix })],
    logger: silentLogger(),
  });
  const relay = createRelay(
    {
      directory: createBuildingDirectory({ baseUrl: `http://127.0.0.1:${directoryPort}`, cacheTtlMs: 60_000 }),
      broker,
      registry: createRegistry('relay', { defaults: false }),
      logger: silentLogger(),
    },
    { frontendOrigin: 'http://localhost:5173', maxLifetimeMs: 900_000, channels: { notifications: `bench:relay:${run}:notifications`, telemetryPrefix: relayPrefix } },
  );
  const relayPort = await relay.start(0, '127.0.0.1');
  await broker.subscribed();
  const bare = await startBareServer(url, barePrefix);
  const publisher = new Redis(url);

  const child = fork(fileURLToPath(new URL('./clients.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const fleet = new ClientFleet(child);
  const stopAll = async () => {
    child.disconnect();
    publisher.disconnect();
    await bare.stop();
    await relay.stop();
    await closeServer(directoryServer);
  };

  try {
    const relayTarget: Target = { kind: 'relay', url: `http://127.0.0.1:${relayPort}`, prefix: relayPrefix };
    const bareTarget: Target = { kind: 'bare', url: bare.url, prefix: barePrefix };
    const relayMemory = await connectFleet(relayTarget, fleet, claims);
    const bareMemory = await connectFleet(bareTarget, fleet, claims);
    // One second of the same load first, not measured: JIT and buffers warm up on both sides.
    await fixedRate(relayTarget, fleet, publisher, 1);
    const relayFixed = await fixedRate(relayTarget, fleet, publisher);
    await fixedRate(bareTarget, fleet, publisher, 1);
    const bareFixed = await fixedRate(bareTarget, fleet, publisher);
    // The machine is shared: alternate short saturation rounds and keep each server's best.
    let relayMax = 0;
    let bareMax = 0;
    for (let round = 0; round < SATURATION_ROUNDS; round++) {
      relayMax = Math.max(relayMax, await saturate(relayTarget, fleet, publisher, SATURATION_SECS));
      bareMax = Math.max(bareMax, await saturate(bareTarget, fleet, publisher, SATURATION_SECS));
    }
    await fleet.request({ cmd: 'disconnect' }, 'disconnected');

    const line = (label: string, value: number, unit: string, digits = 1) => console.log(`${label}: ${value.toFixed(digits)} ${unit}`);
    line('clients', CLIENTS, 'websocket clients per server', 0);
    line('rooms', ROOMS, 'building rooms', 0);
    line('fixed rate offered', FIXED_DELIVERIES_PER_SEC, 'deliveries/s', 0);
    line('relay deliveries at fixed rate, to the last delivery', relayFixed.deliveriesPerSec, 'deliveries/s', 0);
    line('relay latency p50', relayFixed.p50, 'ms', 2);
    line('relay latency p99', relayFixed.p99, 'ms', 2);
    line('relay lost at fixed rate', relayFixed.lost, 'deliveries', 0);
    line('relay memory per connection (heap+external)', relayMemory.heap / 1024, 'KiB');
    line('relay memory per connection (rss)', relayMemory.rss / 1024, 'KiB');
    line('bare ws deliveries at fixed rate, to the last delivery', bareFixed.deliveriesPerSec, 'deliveries/s', 0);
    line('bare ws latency p50', bareFixed.p50, 'ms', 2);
    line('bare ws latency p99', bareFixed.p99, 'ms', 2);
    line('bare ws lost at fixed rate', bareFixed.lost, 'deliveries', 0);
    line('bare ws memory per connection (heap+external)', bareMemory.heap / 1024, 'KiB');
    line('bare ws memory per connection (rss)', bareMemory.rss / 1024, 'KiB');
    line('relay max deliveries', relayMax, 'deliveries/s', 0);
    line('bare ws max deliveries', bareMax, 'deliveries/s', 0);
    console.log(`ratio: ${(relayMax / bareMax).toFixed(2)}`);
  } finally {
    await stopAll();
  }
}

const deadline = setTimeout(() => {
  console.error('benchmark exceeded 2 minutes');
  process.exit(1);
}, 120_000);
deadline.unref();

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`benchmark failed: ${(err as Error).message}`);
    process.exit(1);
  },
);
