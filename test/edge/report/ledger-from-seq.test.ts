/**
 * `--from-seq` is honoured by every ledger action, as `lintel-edge help` promises
 * (`ledger verify|audit|export … [--from-seq <n>]`): verify checks the chain from that seq on, anchored on
 * the stored hash of the entry before it, and audit looks only at those entries. Ignoring it would make a
 * partial check report on entries the auditor did not ask about, or an incremental check re-judge them.
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

/** A ledger of four entries; entry 1 carried an IP address; `tamper` edits the body of one entry in place. */
function ledgerFile(t: Test, tamper?: number): string {
  const path = join(t.testdir({}), 'ledger.sqlite');
  const ledger = openLedger(path);
  ['10.20.0.11', 'lobby-1', 'cafe-1', 'lobby-2'].forEach((roomId, i) => ledger.append(body(roomId), ts + i));
  ledger.close();
  if (tamper !== undefined) {
    const db = new Database(path);
    db.prepare('UPDATE ledger_entries SET body = ? WHERE seq = ?').run(body('attic-9'), tamper);
    db.close();
  }
  return path;
}

async function run(args: string[]) {
  const { out, err, io } = captureIo();
  const code = await main(args, io);
  return { code, out: out.join(''), err: err.join('') };
}

t.test('verify --from-seq checks the chain from that seq on, and says where it is anchored', async (t) => {
  const before = ledgerFile(t, 2);
  const whole = await run(['ledger', 'verify', '--ledger', before]);
  t.equal(whole.code, 1, whole.out);
  t.match(whole.out, /seq 2: hash does not match the body/);

  const after = await run(['ledger', 'verify', '--ledger', before, '--from-seq', '3']);
  t.equal(after.code, 0, after.out);
  t.match(after.out, /: 2 entries, chain intact from seq 2 [0-9a-f]{64} \(--from-seq 3: entries up to seq 2 not checked\) to seq 4\n/);

  const fromTheStart = await run(['ledger', 'verify', '--ledger', before, '--from-seq', '1']);
  t.equal(fromTheStart.code, 1, '--from-seq 1 is the whole chain');

  const broken = await run(['ledger', 'verify', '--ledger', ledgerFile(t, 4), '--from-seq', '3']);
  t.equal(broken.code, 1, broken.out);
  t.match(broken.out, /chain BROKEN \(1 problem in 2 entries\)\n {2}seq 4: hash does not match the body/);

  const past = await run(['ledger', 'verify', '--ledger', before, '--from-seq', '9']);
  t.equal(past.code, 0, past.out);
  t.match(past.out, /no entries from seq 9, chain intact from seq 4 /);
});

t.test('verify --from-seq past a deleted entry reports it instead of anchoring on nothing', async (t) => {
  const path = ledgerFile(t);
  const db = new Database(path);
  db.prepare('DELETE FROM ledger_entries WHERE seq = 2').run();
  db.close();
  const result = await run(['ledger', 'verify', '--ledger', path, '--from-seq', '3']);
  t.equal(result.code, 1, result.out);
  t.match(result.out, /seq 2: missing, so the chain cannot be checked from seq 3/);
});

t.test('audit --from-seq audits only the entries from that seq on', async (t) => {
  const path = ledgerFile(t);
  const whole = await run(['ledger', 'audit', '--ledger', path]);
  t.equal(whole.code, 1, whole.out);
  t.match(whole.out, /^seq 1 readings\[0\]\.roomId: identifier: /);

  const later = await run(['ledger', 'audit', '--ledger', path, '--from-seq', '2']);
  t.equal(later.code, 0, later.out);
  t.match(later.out, /^audit passed: 3 entries, 3 readings, \d+ bytes in .* from seq 2;/);
});

t.test('export --from-seq still prints only the entries from that seq on', async (t) => {
  const result = await run(['ledger', 'export', '--ledger', ledgerFile(t), '--from-seq', '3']);
  t.equal(result.code, 0);
  t.same(result.out.trim().split('\n').map((line) => (JSON.parse(line) as { seq: number }).seq), [3, 4]);
});
