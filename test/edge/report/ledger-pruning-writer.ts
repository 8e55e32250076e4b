/**
 * A collector's ledger in a second process, for the tests of reading a ledger while it is pruned (run
 * with `node --import tsx`): `<path> <keep>` appends one entry and prunes all but the newest `keep`, over
 * and over, as fast as the file allows; prints `pruning` after the first round, and `done <rounds>` once
 * a line (or the end) arrives on stdin.
 */
import { createInterface } from 'node:readline';
import { openLedger } from '../../../edge/src/report/ledger.js';

const [path, keep] = process.argv.slice(2);
const ledger = openLedger(path!);
let rounds = 0;
let stopping = false;
createInterface({ input: process.stdin }).once('line', () => (stopping = true)).once('close', () => (stopping = true));

/** One round: an entry as old as the epoch, so that every entry past the newest `keep` is prunable. */
function round(): void {
  const entry = ledger.append(JSON.stringify({ batchId: `round-${rounds}`, readings: [] }), 1);
  ledger.setDelivery(entry.seq, 'kept');
  ledger.prune(Date.now(), Number(keep));
  rounds++;
}

round();
process.stdout.write('pruning\n');
// Rounds in batches, yielding between them so the stop line is read.
const loop = () => {
  if (stopping) {
    ledger.close();
    process.stdout.write(`done ${rounds}\n`);
    return;
  }
  for (let i = 0; i < 20; i++) round();
  setImmediate(loop);
};
loop();
