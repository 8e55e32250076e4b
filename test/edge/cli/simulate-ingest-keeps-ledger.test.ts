/**
 * `simulate --ingest` without --state-dir removed its temporary directory at the end, and the ledger of
 * the batches it had posted with it, though every batch body that leaves the gateway is to be in the
 * ledger (SECURITY.md §4). The ledger is now kept, alone, in a directory of its own, and its path is
 * printed with the command that checks it; the secrets (the device key, the building's SSH private key
 * and SNMP secrets) are still removed with the temporary directory. Without --ingest nothing is kept.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { simulate, type SimulateOptions } from '../../../edge/src/commands/simulate.js';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { captureIo } from '../support/cli-io.js';
import { startVerifyingIngest } from '../report/verifying-ingest.js';
import { ownTmpdir } from '../support/scratch-dir.js';
import { runCli } from './building-config.js';

const KEY = 'simulate-ledger-key';

/** Every file under `dir`, relative to it, links included. */
function filesIn(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => !entry.isDirectory())
    .map((entry) => join(entry.parentPath ?? entry.path, entry.name).slice(dir.length + 1))
    .sort();
}

/** The words a POSIX shell makes of `line`. */
const shellSplit = (line: string) => execFileSync('sh', ['-c', `printf '%s\\n' ${line}`], { encoding: 'utf8' }).split('\n').slice(0, -1);

const options = (extra: Partial<SimulateOptions>): SimulateOptions => ({ intervalMs: 300, ticks: 3, seed: 7, accessPoints: 3, zones: 2, devices: 6, output: 'lines', ...extra });

t.test('simulate --ingest without --state-dir keeps the ledger of the batches posted, and nothing else', async (t) => {
  const tmp = ownTmpdir(t);
  const ingest = await startVerifyingIngest(t, { default: KEY });
  const { out, err, io } = captureIo();
  let temporary = '';
  const { exitCode, summary } = await simulate(options({ ingest: { url: ingest.url, secret: KEY } }), io, {
    onTemporaryState: ({ dir }) => {
      temporary = dir;
    },
  });
  const printed = out.join('');
  t.comment(printed);
  t.equal(exitCode, 0, `the run succeeds (${err.join('')})`);
  t.same(summary.deliveries, { accepted: 3 }, 'three batches posted and accepted');

  t.same(readdirSync(tmp).filter((name) => name.startsWith('lintel-edge-sim-')), [], 'the temporary directory is removed');
  t.match(temporary, `${tmp}/lintel-edge-sim-`, 'the one the caller is told to remove on a second Ctrl-C');
  const kept = readdirSync(tmp).filter((name) => name.startsWith('lintel-edge-ledger-'));
  t.equal(kept.length, 1, 'one directory is kept');
  const keptDir = join(tmp, kept[0]!);
  t.same(filesIn(keptDir), ['ledger.sqlite'], 'holding the ledger only: no device key, no zones, no building secret');
  const ledgerPath = join(keptDir, 'ledger.sqlite');
  t.equal(summary.ledger, ledgerPath, 'the summary names it');
  t.equal(summary.stateDir, null, 'and no state directory');

  const ledger = openLedger(ledgerPath, { readonly: true });
  const bodies = [...ledger.entries()].map((entry) => entry.body);
  ledger.close();
  t.same(bodies, ingest.received.map((r) => r.raw.toString('utf8')), 'every posted body is in it, byte for byte, in order');

  t.match(printed, `state in ${temporary} (temporary); the ledger of the batches posted in ${keptDir} (kept)`, 'the start says where the ledger is kept');
  const check = /check it with: (lintel-edge .*)$/m.exec(printed)?.[1] ?? '';
  t.match(printed, `state removed, but for the ledger of the batches posted: ${ledgerPath} (head seq 3); check it with: `, 'the end names it');
  const [command, ...args] = shellSplit(check);
  t.equal(command, 'lintel-edge');
  const verified = await runCli(args);
  t.equal(verified.code, 0, `the printed check passes: ${check} (${verified.stderr})`);
});

t.test('simulate without --ingest keeps nothing', async (t) => {
  const tmp = ownTmpdir(t);
  const { out, io } = captureIo();
  const { exitCode, summary } = await simulate(options({}), io);
  t.equal(exitCode, 0);
  t.same(summary.deliveries, { kept: 3 });
  t.equal(summary.ledger, null, 'no ledger is left');
  t.same(readdirSync(tmp), [], 'nothing of the run is left in TMPDIR');
  t.match(out.join(''), /state removed \(run with --state-dir <dir> to keep it/);
});
