/**
 * A resolver (the outside DNS service) whose lookups of `*.stuck.test` never answer, each holding a real
 * thread of libuv's pool the way getaddrinfo does against a DNS server that drops queries: it opens a
 * FIFO nobody writes to, a call that blocks its thread. `localhost` goes to the real dns.lookup; any other
 * name is refused and recorded in `unexpected`.
 *
 * At teardown the FIFO is opened for reading and writing (which never blocks on Linux), and every blocked
 * open returns, so no thread stays taken; each stuck lookup then fails as a resolver that gave up (ETIMEOUT).
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemResolver, type Resolver } from '../../shared/lookup.js';

export interface StuckResolver {
  resolve: Resolver;
  /** The `*.stuck.test` names looked up, one entry per lookup (each holds a thread until teardown). */
  stuck: string[];
  unexpected: string[];
}

/**
 * @example
 * const resolver = stuckResolver(t);
 * const dispatcher = createDeviceDispatcher({ resolve: resolver.resolve });
 */
export function stuckResolver(t: { teardown(fn: () => unknown): void }): StuckResolver {
  const dir = mkdtempSync(join(tmpdir(), 'stuck-resolver-'));
  const fifo = join(dir, 'never-written');
  execFileSync('mkfifo', [fifo]);
  const stuck: string[] = [];
  const unexpected: string[] = [];
  const blocked: Array<Promise<void>> = [];
  const resolve: Resolver = (hostname, options, callback) => {
    if (hostname.endsWith('.stuck.test')) {
      stuck.push(hostname);
      const held = open(fifo, 'r').then((handle) => handle.close());
      const gaveUp = Object.assign(new Error(`the resolver gave up on ${hostname}`), { code: 'ETIMEOUT' });
      blocked.push(held.then(() => callback(gaveUp, [])));
      return;
    }
    if (hostname === 'localhost') {
      systemResolver(hostname, options, callback);
      return;
    }
    unexpected.push(hostname);
    callback(Object.assign(new Error(`unexpected lookup of ${hostname}`), { code: 'ENOTFOUND' }), []);
  };
  t.teardown(async () => {
    // Opened on the main thread: the pool's threads may all be blocked (that is what a failing test shows).
    const release = openSync(fifo, 'r+');
    await Promise.all(blocked);
    closeSync(release);
    rmSync(dir, { recursive: true, force: true });
  });
  return { resolve, stuck, unexpected };
}
