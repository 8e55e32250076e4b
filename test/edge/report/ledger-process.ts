/**
 * A second process on a ledger file, for the tests of two processes sharing it (run with
 * `node --import tsx`):
 * - `append <path> <n>`: opens it as a gateway does and appends n bodies, recording each delivery; prints
 *   `done <n>`, or `error <name>: <message>`;
 * - `hold <path>`: takes the write lock (as a long write would), prints `holding`, and commits when a line
 *   arrives on stdin.
 */
import Database from 'better-sqlite3';
import { createInterface } from 'node:readline';
import { openLedger } from '../../../edge/src/report/ledger.js';

const [action, path, count] = process.argv.slice(2);

if (action === 'append') {
  try {
    const ledger = openLedger(path!);
    const n = Number(count);
    for (let i = 0; i < n; i++) {
      const entry = ledger.append(JSON.stringify({ batchId: `p${process.pid}@${i}`, readings: [] }), Date.now());
      ledger.setDelivery(entry.seq, 'kept');
    }
    ledger.close();
    process.stdout.write(`done ${n}\n`);
  } catch (err) {
    process.stdout.write(`error ${(err as Error).name}: ${(err as Error).message}\n`);
  }
} else if (action === 'hold') {
  const db = new Database(path!);
  db.exec('BEGIN IMMEDIATE');
  process.stdout.write('holding\n');
  createInterface({ input: process.stdin }).once('line', () => {
    db.exec('COMMIT');
    db.close();
    process.exit(0);
  });
}
