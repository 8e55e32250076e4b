import t, { type Test } from 'tap';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { chainHash, GENESIS_HASH, verifyChain } from '../../../edge/src/report/chain.js';

const body = (n: number) =>
  JSON.stringify({ batchId: `hq@2026-11-22T19:04:${String(n).padStart(2, '0')}.000Z`, readings: [{ type: 'totalDeviceCount', buildingId: 'hq', roomId: 'lobby', timestamp: 1795374254000 + n, totalDeviceCount: n }] });

function filled(t: Test, n: number) {
  const path = join(t.testdir({}), 'ledger.sqlite');
  const ledger = openLedger(path);
  for (let i = 1; i <= n; i++) ledger.append(body(i), 1795374254000 + i * 1000);
  ledger.close();
  return path;
}

function tamper(path: string, sql: string, ...params: unknown[]) {
  const db = new Database(path);
  db.prepare(sql).run(...params);
  db.close();
}

t.test('entries chain: hash = sha256(prev_hash + body), starting from 64 zeros', async (t) => {
  const path = filled(t, 3);
  const ledger = openLedger(path, { readonly: true });
  t.teardown(() => ledger.close());
  const entries = [...ledger.entries()];
  t.same(entries.map((e) => e.seq), [1, 2, 3]);
  t.equal(entries[0]!.prevHash, GENESIS_HASH);
  t.equal(entries[0]!.hash, chainHash(GENESIS_HASH, body(1)));
  t.equal(entries[1]!.prevHash, entries[0]!.hash);
  t.equal(entries[2]!.body, body(3));
  t.same(ledger.verify(), { ok: true, entries: 3, head: { seq: 3, hash: entries[2]!.hash } });
});

t.test('the chain survives reopening and keeps growing', async (t) => {
  const path = filled(t, 2);
  const ledger = openLedger(path);
  t.teardown(() => ledger.close());
  const third = ledger.append(body(3), Date.now());
  t.equal(third.seq, 3);
  ledger.setDelivery(3, 'accepted');
  t.equal([...ledger.entries(3)][0]!.delivery, 'accepted');
  t.ok(ledger.verify().ok);
});

t.test('verify finds an edited body', async (t) => {
  const path = filled(t, 5);
  tamper(path, 'UPDATE ledger_entries SET body = ? WHERE seq = 3', body(3).replace('"totalDeviceCount":3', '"totalDeviceCount":30'));
  const ledger = openLedger(path, { readonly: true });
  t.teardown(() => ledger.close());
  const verdict = ledger.verify();
  t.notOk(verdict.ok);
  if (!verdict.ok) t.same(verdict.problems, [{ seq: 3, problem: 'hash does not match the body (the entry was edited)' }]);
});

t.test('verify finds an edit whose hash was recomputed', async (t) => {
  const path = filled(t, 5);
  const ledger0 = openLedger(path, { readonly: true });
  const prev = [...ledger0.entries()][1]!.hash;
  ledger0.close();
  const forged = body(3).replace('"totalDeviceCount":3', '"totalDeviceCount":30');
  tamper(path, 'UPDATE ledger_entries SET body = ?, hash = ? WHERE seq = 3', forged, chainHash(prev, forged));
  const ledger = openLedger(path, { readonly: true });
  t.teardown(() => ledger.close());
  const verdict = ledger.verify();
  t.notOk(verdict.ok);
  if (!verdict.ok) t.match(verdict.problems, [{ seq: 4, problem: /prev_hash does not match/ }]);
});

t.test('verify finds a deleted entry', async (t) => {
  const path = filled(t, 5);
  tamper(path, 'DELETE FROM ledger_entries WHERE seq = 2');
  const ledger = openLedger(path, { readonly: true });
  t.teardown(() => ledger.close());
  const verdict = ledger.verify();
  t.notOk(verdict.ok);
  if (!verdict.ok) {
    t.match(verdict.problems, [
      { seq: 3, problem: 'entries 2 are missing (deleted?)' },
      { seq: 3, problem: /prev_hash does not match/ },
    ]);
  }
});

t.test('verify finds a deleted first entry', async (t) => {
  const path = filled(t, 3);
  tamper(path, 'DELETE FROM ledger_entries WHERE seq = 1');
  const ledger = openLedger(path, { readonly: true });
  t.teardown(() => ledger.close());
  t.notOk(ledger.verify().ok);
});

t.test('pruning keeps the rest verifiable from a checkpoint', async (t) => {
  const path = filled(t, 6);
  const ledger = openLedger(path);
  t.teardown(() => ledger.close());
  const third = [...ledger.entries()][2]!;
  t.equal(ledger.prune(third.createdAt + 1), 3);
  t.equal(ledger.count(), 3);
  t.same(ledger.start(), { seq: 3, hash: third.hash });
  t.same(ledger.verify(), { ok: true, entries: 3, head: ledger.head() });
  t.equal(ledger.append(body(7), Date.now()).seq, 7);
  t.ok(ledger.verify().ok);
  t.equal(ledger.prune(0), 0, 'nothing older: nothing pruned');
});

t.test('verifyChain reports a reordering', async (t) => {
  const a = { seq: 1, createdAt: 1, prevHash: GENESIS_HASH, hash: chainHash(GENESIS_HASH, 'a'), body: 'a', delivery: null };
  const b = { seq: 2, createdAt: 2, prevHash: a.hash, hash: chainHash(a.hash, 'b'), body: 'b', delivery: null };
  t.ok(verifyChain([a, b]).ok);
  t.notOk(verifyChain([b, a]).ok);
});
