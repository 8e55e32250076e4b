/**
 * Redis helpers for tenancy tests: the stack's Redis, a private redis-server that a test may kill, and
 * a bounded poll.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { stackEnv } from '../../../support/stack.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** The shared stack's Redis (tools/stack). Never flushed, never stopped. */
export function stackRedisUrl(): string {
  return stackEnv().REDIS_URL;
}

/** Polls `condition` every 25 ms until it holds; throws after `timeoutMs` naming what was awaited. */
export async function eventually(condition: () => Promise<boolean> | boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A loopback port nothing listens on (bound, then released). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** A redis-server of this test's own, on a free loopback port, without persistence. */
export interface PrivateRedis {
  url: string;
  port: number;
  /** SIGKILLs the server (the shared stack's Redis is never touched). */
  kill(): Promise<void>;
  /** Starts it again on the same port. */
  restart(): Promise<void>;
}

export async function startPrivateRedis(t: Teardown): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'tenancy-redis-'));
  let child: ReturnType<typeof spawn> | undefined;
  let exited: Promise<void> = Promise.resolve();
  const url = `redis://127.0.0.1:${port}`;

  const launch = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
    const current = child;
    exited = new Promise((resolve) => current.once('exit', () => resolve()));
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      await eventually(async () => {
        try {
          if (probe.status !== 'ready') await probe.connect();
          return (await probe.ping()) === 'PONG';
        } catch {
          probe.disconnect();
          return false;
        }
      }, `redis-server on ${port}`);
    } finally {
      probe.disconnect();
    }
  };
  const kill = async () => {
    child?.kill('SIGKILL');
    await exited;
    child = undefined;
  };

  await launch();
  t.teardown(async () => {
    await kill();
    await rm(dir, { recursive: true, force: true });
  });
  return { url, port, kill, restart: launch };
}
