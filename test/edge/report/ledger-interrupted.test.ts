/**
 * Entries a stopped process left without a delivery: opening the ledger for writing marks them
 * `interrupted` (kept, chain untouched, not re-sent), read-only opens leave the file alone, a real outcome
 * recorded later replaces the mark, and the `ledger` commands show it.
 */
import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { main } from '../../../edge/src/commands/main.js';
import { chainHash, GENESIS_HASH } from '../../../edge/src/report/chain.js';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { captureIo } from '../support/cli-io.js';
import { deliveriesOf } from './ledger-reads.js';

const T0 = 1795374254000;
const body = (n: number) =>
  JSON.stringify({ batchId: `hq@2026-11-22T19:04:${String(n).padStart(2, '0')}.000Z`, readings: [{ type: 'totalDeviceCount', buildingId: 'hq', roomId: 'lobby', timestamp: T0 + n, totalDeviceCount: n }] });

/**
 * A ledger file as the gateway wrote it before entries were ever marked: the schema of migration 001,
 * recorded in schema_migrations, and a chain whose deliveries are given (null: the process stopped mid-post).
 */
function writtenBefore(t: Test, deliveries: ReadonlyArray<string | null>): string {
  const path = join(t.testdir({}), 'ledger.sqlite');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE schema_migrations (id TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)');
  db.exec(readFileSync(new URL('../../../edge/src/report/migrations/001_ledger.sql', import.meta.url), 'utf8'));
  db.prepare('INSERT INTO schema_migrations (id, applied_at) VALUES (?, ?)').run('001_ledger', T0);
  const insert = db.prepare('INSERT INTO ledger_entries (seq, created_at, prev_hash, hash, body, delivery) VALUES (?, ?, ?, ?, ?, ?)');
  let prev = GENESIS_HASH;
  deliveries.forEach((delivery, i) => {
    const hash = chainHash(prev, body(i + 1));
    insert.run(i + 1, T0 + i * 60_000, prev, hash, body(i + 1), delivery);
    prev = hash;
  });
  db.close();
  return path;
}

t.test('opening for writing marks the entries a stopped process left without an outcome, and keeps every entry', async (t) => {
  const path = writtenBefore(t, ['accepted', null, 'unreachable', 'rejected', 'kept', null]);
  const before = openLedger(path, { readonly: true });
  const stored = [...before.entries()];
  t.same(before.interrupted, { count: 0, firstSeq: null, lastSeq: null }, 'a read-only open marks nothing');
  before.close();
  t.same(deliveriesOf(path), ['accepted', null, 'unreachable', 'rejected', 'kept', null], 'nor writes anything');

  const ledger = openLedger(path);
  t.same(ledger.interrupted, { count: 2, firstSeq: 2, lastSeq: 6 });
  const after = [...ledger.entries()];
  t.same(
    after.map((e) => e.delivery),
    ['accepted', 'interrupted', 'unreachable', 'rejected', 'kept', 'interrupted'],
  );
  t.same(
    after.map(({ seq, createdAt, prevHash, hash, body }) => ({ seq, createdAt, prevHash, hash, body })),
    stored.map(({ seq, createdAt, prevHash, hash, body }) => ({ seq, createdAt, prevHash, hash, body })),
    'every entry kept as it was, but for the mark',
  );
  t.same(ledger.verify(), { ok: true, entries: 6, head: { seq: 6, hash: stored[5]!.hash } }, 'the chain is intact: the delivery is not chained');
  const next = ledger.append(body(7), T0 + 7 * 60_000);
  t.equal(next.seq, 7, 'the chain grows on from the head');
  t.equal(next.delivery, null, 'a new entry is in flight until its outcome is recorded');
  ledger.close();

  const db = new Database(path, { readonly: true });
  t.same(db.prepare('SELECT id FROM schema_migrations').all(), [{ id: '001_ledger' }], 'no schema change was needed');
  db.close();

  const reopened = openLedger(path);
  t.same(reopened.interrupted, { count: 1, firstSeq: 7, lastSeq: 7 }, 'the next open marks only what is new');
  reopened.close();
  const again = openLedger(path);
  t.same(again.interrupted, { count: 0, firstSeq: null, lastSeq: null }, 'and then nothing');
  again.close();
});

t.test('an outcome recorded after the mark replaces it (a post still in flight in another process)', async (t) => {
  const path = join(t.testdir({}), 'ledger.sqlite');
  const gateway = openLedger(path);
  t.teardown(() => gateway.close());
  const entry = gateway.append(body(1), T0);
  const other = openLedger(path);
  t.same(other.interrupted, { count: 1, firstSeq: 1, lastSeq: 1 });
  other.close();
  t.same(deliveriesOf(path), ['interrupted']);
  gateway.setDelivery(entry.seq, 'accepted');
  t.same(deliveriesOf(path), ['accepted']);
});

t.test('the ledger commands show the mark; prune and audit work over marked entries', async (t) => {
  const path = writtenBefore(t, [null, 'accepted', 'accepted', null, 'unreachable', 'accepted']);
  const ledger = openLedger(path);
  t.equal(ledger.interrupted.count, 2);
  t.equal(ledger.prune(T0 + 60_000 + 1), 2, 'the two oldest entries pruned, an interrupted one among them');
  t.same(ledger.start(), { seq: 2, hash: chainHash(chainHash(GENESIS_HASH, body(1)), body(2)) });
  t.ok(ledger.verify().ok);
  ledger.close();

  const exported = captureIo();
  t.equal(await main(['ledger', 'export', '--ledger', path], exported.io), 0);
  const lines = exported.out.join('').trim().split('\n').map((l) => JSON.parse(l) as { seq: number; delivery: string | null });
  t.same(
    lines.map((l) => [l.seq, l.delivery]),
    [
      [3, 'accepted'],
      [4, 'interrupted'],
      [5, 'unreachable'],
      [6, 'accepted'],
    ],
  );

  const audited = captureIo();
  t.equal(await main(['ledger', 'audit', '--ledger', path], audited.io), 0);
  const report = audited.out.join('');
  t.match(report, /^audit passed: 4 entries, 4 readings/);
  t.match(report, /\ndeliveries: 2 accepted, 1 interrupted, 1 unreachable \(interrupted: the gateway stopped before the post's outcome was known; it may or may not have reached the ingest\)\n$/);

  const verified = captureIo();
  t.equal(await main(['ledger', 'verify', '--ledger', path], verified.io), 0);
  t.match(verified.out.join(''), /4 entries, chain intact from checkpoint seq 2/);
});

t.test('an audit of a ledger whose entries are still unmarked says they have no outcome yet', async (t) => {
  const path = writtenBefore(t, ['accepted', null]);
  const audited = captureIo();
  t.equal(await main(['ledger', 'audit', '--ledger', path], audited.io), 0);
  t.match(audited.out.join(''), /\ndeliveries: 1 accepted, 1 no outcome yet\n$/);
  t.same(deliveriesOf(path), ['accepted', null], 'the auditor’s read-only commands mark nothing');
});
