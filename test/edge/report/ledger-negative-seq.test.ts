/**
 * A row slipped into the ledger with a seq the chain cannot hold (negative, or 0) is not hidden from the
 * auditor: verify reports it as not part of the chain, audit audits its body and its place in the chain,
 * export prints it.
 */
import t from 'tap';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { main } from '../../../edge/src/commands/main.js';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { chainHash, GENESIS_HASH } from '../../../edge/src/report/chain.js';
import { captureIo } from '../support/cli-io.js';

const ts = 1795374254000;
const body = (roomId: string) =>
  JSON.stringify({ batchId: 'hq@2026-11-22T19:04:14.000Z', readings: [{ type: 'apClients', buildingId: 'hq', roomId, timestamp: ts, apClients: 4 }] });

async function run(args: string[]) {
  const { out, io } = captureIo();
  const code = await main(args, io);
  return { code, out: out.join('') };
}

t.test('rows with a seq below the chain are reported by verify, audit and export', async (t) => {
  const path = join(t.testdir({}), 'ledger.sqlite');
  const ledger = openLedger(path);
  ['lobby-1', 'cafe-1', 'lobby-2'].forEach((roomId, i) => ledger.append(body(roomId), ts + i));
  ledger.close();
  const db = new Database(path);
  const insert = db.prepare('INSERT INTO ledger_entries (seq, created_at, prev_hash, hash, body) VALUES (?, ?, ?, ?, ?)');
  // Self-consistent rows (hash = sha256(prev_hash + body)), so only their place gives them away.
  insert.run(-1, ts, GENESIS_HASH, chainHash(GENESIS_HASH, body('3c:22:fb:01:02:03')), body('3c:22:fb:01:02:03'));
  insert.run(0, ts, GENESIS_HASH, chainHash(GENESIS_HASH, body('attic-9')), body('attic-9'));
  db.close();

  const verify = await run(['ledger', 'verify', '--ledger', path]);
  t.equal(verify.code, 1, verify.out);
  t.equal(
    verify.out.replace(/^ledger .*?: /, ''),
    'chain BROKEN (2 problems in 5 entries)\n' +
      '  seq -1: not part of the chain, which starts after seq 0 (an inserted row?)\n' +
      '  seq 0: not part of the chain, which starts after seq 0 (an inserted row?)\n',
    'the rows are named, and the real chain after them is not blamed',
  );

  const audit = await run(['ledger', 'audit', '--ledger', path]);
  t.equal(audit.code, 1, audit.out);
  t.match(audit.out, /^seq -1 readings\[0\]\.roomId: identifier: value .* looks like a MAC/);
  t.match(audit.out, /^seq -1 \(chain\): broken-chain: not part of the chain/m, 'and fails their place in the chain');
  t.match(audit.out, /audit FAILED: 3 findings \(2 in the hash chain: .*\) in 5 entries/);

  const exported = await run(['ledger', 'export', '--ledger', path]);
  t.equal(exported.code, 0);
  t.same(exported.out.trim().split('\n').map((line) => (JSON.parse(line) as { seq: number }).seq), [-1, 0, 1, 2, 3]);
});
