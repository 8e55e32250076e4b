/**
 * One ledger file, several processes: gateways (or doctor's probe) appending at once, the collector's
 * prune while another process appends, and an operator's command while a write holds the lock. Each
 * waits its turn or fails with a message; none loses an entry or dies on a stack trace.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { main } from '../../../edge/src/commands/main.js';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { StorageError } from '../../../edge/src/storage/sqlite.js';
import { REPO, until } from '../cli/building-config.js';
import { captureIo } from '../support/cli-io.js';

const HELPER = new URL('./ledger-process.ts', import.meta.url).pathname;

function startHelper(args: string[]) {
  const child = spawn(process.execPath, ['--import', 'tsx', HELPER, ...args], { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, out: () => out, err: () => err, exited };
}

t.test('processes creating and appending to one ledger at once each get every entry in, in one chain', { timeout: 120_000 }, async (t) => {
  const path = join(t.testdir({}), 'state', 'ledger.sqlite');
  const writers = [1, 2, 3].map(() => startHelper(['append', path, '25']));
  t.teardown(() => writers.forEach((w) => w.child.exitCode === null && w.child.kill('SIGKILL')));
  await Promise.all(writers.map((w) => w.exited));
  t.same(
    writers.map((w) => w.out()),
    writers.map(() => 'done 25\n'),
    `each appended all of its entries (${writers.map((w) => w.out() + w.err()).join(' | ')})`,
  );
  const ledger = openLedger(path, { readonly: true });
  t.teardown(() => ledger.close());
  t.same(ledger.verify(), { ok: true, entries: 75, head: ledger.head() });
  t.equal(ledger.head().seq, 75);
});

t.test('pruning while another process appends waits for the lock instead of failing', { timeout: 120_000 }, async (t) => {
  const path = join(t.testdir({}), 'ledger.sqlite');
  const ledger = openLedger(path);
  t.teardown(() => ledger.close());
  const writer = startHelper(['append', path, '1500']);
  t.teardown(() => writer.child.exitCode === null && writer.child.kill('SIGKILL'));
  const failures: string[] = [];
  let prunes = 0;
  let removed = 0;
  while (writer.child.exitCode === null) {
    try {
      removed += ledger.prune(Date.now() + 60_000, 5);
      prunes++;
    } catch (err) {
      failures.push((err as Error).message);
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  await writer.exited;
  t.equal(writer.out(), 'done 1500\n', writer.err());
  t.same(failures.slice(0, 3), [], `no prune failed (${failures.length} of ${prunes + failures.length})`);
  t.ok(removed > 0, `the prunes removed entries while the appends went on (${removed})`);
  t.ok(ledger.verify().ok, 'the chain is intact from its checkpoint');
  t.equal(ledger.head().seq, 1500);
});

t.test('a write lock held past the busy timeout: a clear error at open; the auditor reads all the same', { timeout: 120_000 }, async (t) => {
  const path = join(t.testdir({}), 'ledger.sqlite');
  const first = openLedger(path);
  first.append('{"batchId":"hq@2026-11-22T19:04:14.000Z","readings":[]}', Date.now());
  first.close();

  const holder = startHelper(['hold', path]);
  t.teardown(() => holder.child.exitCode === null && holder.child.kill('SIGKILL'));
  t.ok(await until(() => holder.out() === 'holding\n' || holder.child.exitCode !== null, 30_000), `the other process holds the write lock (${holder.err()})`);

  const verified = captureIo();
  t.equal(await main(['ledger', 'verify', '--ledger', path], verified.io), 0, `verify reads past the lock (${verified.err.join('')})`);
  t.match(verified.out.join(''), /1 entries, chain intact/);

  t.throws(() => openLedger(path), new StorageError(`cannot mark the interrupted entries of ${path}: database is locked`, 'SQLITE_BUSY'), 'the gateway cannot start on it, and says why');

  holder.child.stdin!.end('release\n');
  t.equal(await holder.exited, 0);
  const ledger = openLedger(path);
  t.teardown(() => ledger.close());
  t.same(ledger.interrupted, { count: 1, firstSeq: 1, lastSeq: 1 }, 'once the lock is free, the open goes through');
});

t.test('a writer waits for a lock held shorter than the busy timeout', { timeout: 120_000 }, async (t) => {
  const path = join(t.testdir({}), 'ledger.sqlite');
  openLedger(path).close();
  const holder = startHelper(['hold', path]);
  t.teardown(() => holder.child.exitCode === null && holder.child.kill('SIGKILL'));
  t.ok(await until(() => holder.out() === 'holding\n' || holder.child.exitCode !== null, 30_000), `the other process holds the write lock (${holder.err()})`);
  const writer = startHelper(['append', path, '3']);
  t.teardown(() => writer.child.exitCode === null && writer.child.kill('SIGKILL'));
  holder.child.stdin!.end('release\n');
  await writer.exited;
  t.equal(writer.out(), 'done 3\n', `the appends went through once the lock was free (${writer.err()})`);
});
