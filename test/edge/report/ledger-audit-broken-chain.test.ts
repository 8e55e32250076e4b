/**
 * `ledger audit` checks the hash chain over the entries it audits, in the same snapshot. It judged each
 * body by its bytes alone, so an entry edited in place with a clean body passed the audit: only the
 * chain shows that the file no longer holds what was sent, and a broken chain fails the audit.
 */
import t, { type Test } from 'tap';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { main } from '../../../edge/src/commands/main.js';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { captureIo } from '../support/cli-io.js';

const ts = 1795374254000;
const body = (roomId: string) =>
  JSON.stringify({ batchId: 'hq@2026-11-22T19:04:14.000Z', readings: [{ type: 'apClients', buildingId: 'hq', roomId, timestamp: ts, apClients: 4 }] });

/** A ledger of three clean entries, then `sql` run on the file as someone editing it would. */
function tampered(t: Test, sql: string, ...params: unknown[]): string {
  const path = join(t.testdir({}), 'ledger.sqlite');
  const ledger = openLedger(path);
  ['lobby-1', 'cafe-1', 'lobby-2'].forEach((roomId, i) => ledger.append(body(roomId), ts + i));
  ledger.close();
  const db = new Database(path);
  db.prepare(sql).run(...params);
  db.close();
  return path;
}

async function audit(path: string, ...extra: string[]) {
  const { out, io } = captureIo();
  const code = await main(['ledger', 'audit', '--ledger', path, ...extra], io);
  return { code, out: out.join('') };
}

t.test('an entry edited in place with a clean body fails the audit, naming the chain', async (t) => {
  const path = tampered(t, 'UPDATE ledger_entries SET body = ? WHERE seq = 2', body('attic-9'));
  const result = await audit(path);
  t.equal(result.code, 1, result.out);
  t.match(result.out, /^seq 2 \(chain\): broken-chain: hash does not match the body \(the entry was edited\)\n/m);
  t.match(result.out, /^audit FAILED: 1 finding \(1 in the hash chain: the file is not what was sent; see ledger verify\) in 3 entries of /m);
  t.notMatch(result.out, /audit passed/);
});

t.test('a removed entry fails the audit too, and --from-seq checks the chain from its anchor', async (t) => {
  const path = tampered(t, 'DELETE FROM ledger_entries WHERE seq = 2');
  const whole = await audit(path);
  t.equal(whole.code, 1, whole.out);
  t.match(whole.out, /^seq 3 \(chain\): broken-chain: prev_hash does not match the previous entry/m);

  const edited = tampered(t, 'UPDATE ledger_entries SET body = ? WHERE seq = 1', body('attic-9'));
  const later = await audit(edited, '--from-seq', '2');
  t.equal(later.code, 0, `entries from seq 2 on chain on from the stored hash of seq 1: ${later.out}`);
  t.match(later.out, /^audit passed: 2 entries, 2 readings, \d+ bytes in .* from seq 2; .*; hash chain intact\n/);
});

t.test('an untouched ledger passes, and says its chain is intact', async (t) => {
  const path = tampered(t, 'UPDATE ledger_entries SET delivery = ? WHERE seq = 1', 'accepted');
  const result = await audit(path);
  t.equal(result.code, 0, result.out);
  t.match(result.out, /^audit passed: 3 entries, 3 readings, .*; hash chain intact\n/);
});
