/**
 * `simulate --ingest` whose every batch the ingest refuses (here: the wrong key) does not end as a
 * success: it exits 1 and says why, without printing the key. One refused batch among accepted ones is
 * not a failure (the next tick supersedes it). Refused or not, the batches left the gateway: their ledger
 * is kept (here in a TMPDIR of the test's own, so none is left in the shared one).
 */
import t from 'tap';
import { readdirSync } from 'node:fs';
import { startVerifyingIngest } from '../report/verifying-ingest.js';
import { ownTmpdir } from '../support/scratch-dir.js';
import { runSimulate } from '../support/simulate-run.js';

const WRONG_KEY = 'not-the-key-the-ingest-holds-4711';

t.test('simulate exits 1 when the ingest accepted none of its batches, and names the reason', async (t) => {
  const tmp = ownTmpdir(t);
  const ingest = await startVerifyingIngest(t, { default: 'the-ingest-shared-key' });
  const { exitCode, summary, out, err } = await runSimulate({ intervalMs: 1500, ticks: 3, seed: 5, ingest: { url: ingest.url, secret: WRONG_KEY }, output: 'lines' });
  t.equal(ingest.received.length, 3, 'every tick posted');
  t.ok(ingest.received.every((b) => b.status === 403));
  t.same(summary.deliveries, { rejected: 3 });
  t.equal(exitCode, 1);
  t.match(err.join(''), /the ingest at http:\/\/127\.0\.0\.1:\d+\/ingest accepted none of 3 batches \(last: 403 invalid signature\); check --ingest, --ingest-secret-file and --key-id/);
  t.notOk([...out, ...err].join('').includes(WRONG_KEY), 'the key is not printed');
  t.equal(readdirSync(tmp).filter((name) => name.startsWith('lintel-edge-ledger-')).length, 1, 'the ledger of the refused batches is kept');
});

t.test('simulate exits 0 when the ingest accepted its batches', async (t) => {
  ownTmpdir(t);
  const ingest = await startVerifyingIngest(t, { default: 'the-ingest-shared-key' });
  const { exitCode, summary, err } = await runSimulate({ intervalMs: 1500, ticks: 2, seed: 5, ingest: { url: ingest.url, secret: 'the-ingest-shared-key' }, output: 'lines' });
  t.same(summary.deliveries, { accepted: 2 });
  t.equal(exitCode, 0);
  t.same(err, []);
});
