/**
 * `ledger verify` while the collector prunes the same file: the checkpoint (where the chain starts) and
 * the entries are read in one snapshot, so a prune committed between the two reads cannot make an intact
 * chain look BROKEN (the entries would then start past the checkpoint that was read).
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { REPO, until } from '../cli/building-config.js';

const WRITER = new URL('./ledger-pruning-writer.ts', import.meta.url).pathname;
const KEEP = 5;
const VERIFIES = 30_000;

t.test('verify under a concurrent pruning writer never reports an intact chain broken', { timeout: 120_000 }, async (t) => {
  const path = join(t.testdir({}), 'ledger.sqlite');
  const setup = openLedger(path);
  for (let i = 0; i < KEEP; i++) setup.append(JSON.stringify({ batchId: `setup-${i}`, readings: [] }), 1);
  setup.close();

  const writer = spawn(process.execPath, ['--import', 'tsx', WRITER, path, String(KEEP)], { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'] });
  t.teardown(() => {
    if (writer.exitCode === null) writer.kill('SIGKILL');
  });
  let out = '';
  let err = '';
  writer.stdout.on('data', (c: Buffer) => (out += c.toString()));
  writer.stderr.on('data', (c: Buffer) => (err += c.toString()));
  t.ok(await until(() => out.includes('pruning') || writer.exitCode !== null, 30_000), `the writer prunes (${err.slice(0, 300)})`);

  const reader = openLedger(path, { readonly: true });
  t.teardown(() => reader.close());
  const firstCheckpoint = reader.start().seq;
  const broken: string[] = [];
  for (let i = 0; i < VERIFIES; i++) {
    const verdict = reader.verify();
    if (!verdict.ok) broken.push(JSON.stringify(verdict.problems[0]));
    // let the writer's output in now and then
    if (i % 500 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  const lastCheckpoint = reader.start().seq;
  writer.stdin.end('stop\n');
  await new Promise((resolve) => writer.once('exit', resolve));

  t.match(out, /done \d+/, `the writer ran to the end (${err.slice(0, 300)})`);
  t.ok(lastCheckpoint > firstCheckpoint, `entries were pruned while verifying (checkpoint seq ${firstCheckpoint} → ${lastCheckpoint})`);
  t.same(broken.slice(0, 3), [], `no false BROKEN in ${VERIFIES} checks (${broken.length} found)`);
  t.ok(reader.verify().ok, 'and the chain is intact after all');
});

t.test('reads in one snapshot see the file as it was, whatever another connection commits meanwhile', async (t) => {
  const path = join(t.testdir({}), 'ledger.sqlite');
  const writer = openLedger(path);
  t.teardown(() => writer.close());
  for (let i = 0; i < 10; i++) writer.append(JSON.stringify({ batchId: `b-${i}`, readings: [] }), 1);
  const reader = openLedger(path, { readonly: true });
  t.teardown(() => reader.close());

  const seen = reader.snapshot(() => {
    const start = reader.start();
    // A prune lands between the reads: the checkpoint moves to seq 7 and entries 1..7 go.
    t.equal(writer.prune(Date.now(), 3), 7);
    return { start, verdict: reader.verify(), count: reader.count() };
  });
  t.same(seen.start, { seq: 0, hash: seen.start.hash }, 'the chain start read before the prune');
  t.match(seen.verdict, { ok: true, entries: 10 }, 'and the entries as they were with it: intact');
  t.equal(seen.count, 10);
  t.match(reader.verify(), { ok: true, entries: 3 }, 'after the snapshot, the pruned file');
  t.equal(reader.start().seq, 7);
});
