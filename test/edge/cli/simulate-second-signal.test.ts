/**
 * `simulate` without --state-dir keeps its state (the device key, the ledger, the building's SSH private
 * key and SNMP secrets) in a temporary directory it removes at the end. A terminal hangup, or a second
 * Ctrl-C while the first one's stop waited for the tick in flight, took Node's default and ended the
 * process before that: the directory stayed behind. A hangup now stops the run as Ctrl-C does; a second
 * signal removes the directory at once and exits 130. A run with --ingest keeps the ledger of what it
 * posted in a directory of its own (simulate-ingest-keeps-ledger.test.ts): a second signal leaves it,
 * holding the ledger only. It used to leave zones.sqlite beside it, and the device key's link into the
 * removed temporary directory.
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { CREDENTIAL_FILES } from '../../../edge/src/simulate/index.js';
import { startVerifyingIngest } from '../report/verifying-ingest.js';
import { startCli, until, type Child } from './building-config.js';

/** The files of a kept ledger: the database, and the -wal and -shm SQLite may leave when the process ends. */
const LEDGER_FILES = ['ledger.sqlite', 'ledger.sqlite-wal', 'ledger.sqlite-shm'];

const STOPPING = /^lintel-edge: SIG[A-Z]+: stopping after the tick in flight/m;

/** Longer than tap lets a test run: a post to the silent ingest never ends the run before the test does. */
const POST_OUTLASTS_THE_TEST_MS = 3_600_000;

/**
 * A simulation ticking in a TMPDIR of the test's own. With `tickInFlight`, its first tick stays in flight
 * until the run ends: the ingest it posts to never answers, and the post may take longer than any test
 * (--ingest-timeout-ms), so a stop waits for it however slow the machine is.
 */
async function simulation(t: Test, { tickInFlight }: { tickInFlight: boolean }): Promise<{ child: Child; tmp: string; stateDir: string; posted: () => Buffer[] } | undefined> {
  const tmp = t.testdir({});
  const args = ['simulate', '--aps', '2', '--zones', '1', '--devices', '4', '--output', 'lines'];
  let posted = () => /^tick 1 /m.test(child.stdout());
  let bodies = (): Buffer[] => [];
  if (tickInFlight) {
    const ingest = await startVerifyingIngest(t, { default: 'simulate-key' });
    ingest.behave('hang');
    const secretFile = join(tmp, 'ingest.key');
    writeFileSync(secretFile, 'simulate-key\n', { mode: 0o600 });
    args.push('--interval-ms', '5000', '--ingest', ingest.url, '--ingest-secret-file', secretFile, '--ingest-timeout-ms', String(POST_OUTLASTS_THE_TEST_MS));
    posted = () => ingest.received.length > 0;
    bodies = () => ingest.received.map((r) => r.raw);
  } else {
    args.push('--interval-ms', '100');
  }
  // Through env(1) without NODE_OPTIONS: the test runner's process-info hook stays out of the child.
  const child = startCli(args, { TMPDIR: tmp }, ['/usr/bin/env', '-u', 'NODE_OPTIONS']);
  t.teardown(() => {
    if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL');
  });
  await until(() => posted() || child.process.exitCode !== null, 60_000);
  if (!posted()) {
    t.fail(`the simulation did not start: ${child.stderr().slice(0, 500)}`);
    return undefined;
  }
  const stateDir = /state in (\S+) \(temporary\)/.exec(child.stdout())?.[1] ?? '';
  t.match(stateDir, `${tmp}/lintel-edge-sim-`, 'the state is in a temporary directory under TMPDIR');
  t.ok(existsSync(join(stateDir, 'building', CREDENTIAL_FILES.sshClientKey)), 'holding the building’s SSH private key while the run goes on');
  return { child, tmp, stateDir, posted: bodies };
}

const leftIn = (tmp: string) => readdirSync(tmp).filter((name) => name.startsWith('lintel-edge-sim-'));

t.test('a terminal hangup stops the run as Ctrl-C does, and the temporary state is removed', async (t) => {
  const run = await simulation(t, { tickInFlight: false });
  if (!run) return;
  run.child.process.kill('SIGHUP');
  const code = await run.child.exited;
  t.equal(run.child.process.signalCode, null, 'not ended by the signal');
  t.equal(code, 0, 'the run ends as on Ctrl-C');
  t.match(run.child.stderr(), /^lintel-edge: SIGHUP: stopping after the tick in flight \(a signal again to stop at once\)$/m);
  t.match(run.child.stdout(), /state removed/);
  t.notOk(existsSync(run.stateDir), 'the temporary state directory is removed');
  t.same(leftIn(run.tmp), [], 'nothing of the run left in TMPDIR');
});

for (const second of ['SIGINT', 'SIGHUP'] as const) {
  t.test(`${second} while Ctrl-C's stop waits for the tick in flight: the temporary state is removed at once, exit 130`, async (t) => {
    const run = await simulation(t, { tickInFlight: true });
    if (!run) return;
    run.child.process.kill('SIGINT');
    // Once the first is taken (two SIGINTs sent together may be delivered as one). The post in flight
    // does not give up meanwhile, so no wall-clock bound: tap's timeout bounds the wait.
    await until(() => STOPPING.test(run.child.stderr()) || run.child.process.exitCode !== null, Number.POSITIVE_INFINITY);
    t.ok(STOPPING.test(run.child.stderr()), `the first stops the run (stderr: ${run.child.stderr().slice(0, 500)})`);
    t.match(run.child.stderr(), /^lintel-edge: SIGINT: stopping after the tick in flight \(Ctrl-C again to stop at once\)$/m, 'and says how to stop at once');
    run.child.process.kill(second);
    const code = await run.child.exited;
    t.equal(run.child.process.signalCode, null, 'not ended by the signal');
    t.equal(code, 130, 'exit 130, as an interrupted command');
    t.match(run.child.stderr(), new RegExp(`^lintel-edge: ${second} while stopping: stopped at once; the temporary state was removed$`, 'm'));
    t.notOk(existsSync(run.stateDir), 'the temporary state directory is removed');
    t.same(leftIn(run.tmp), [], 'nothing of the run left in TMPDIR');
    // The batch in flight left the gateway: its ledger stays, alone (SQLite, ended mid-run, may leave its
    // -wal and -shm beside it: they hold the ledger's last entries).
    const kept = readdirSync(run.tmp).filter((name) => name.startsWith('lintel-edge-ledger-'));
    t.equal(kept.length, 1, 'the ledger of the batches posted is kept');
    const keptDir = join(run.tmp, kept[0] ?? '');
    const keptFiles = readdirSync(keptDir).sort();
    t.ok(keptFiles.includes('ledger.sqlite'), 'the ledger is there');
    t.same(
      keptFiles.filter((name) => !LEDGER_FILES.includes(name)),
      [],
      `nothing but the ledger is kept: no zones, no link to the removed device key (${keptFiles.join(', ')})`,
    );
    const ledger = openLedger(join(keptDir, 'ledger.sqlite'), { readonly: true });
    const bodies = [...ledger.entries()].map((entry) => entry.body);
    ledger.close();
    t.same(bodies, run.posted().map((raw) => raw.toString('utf8')), 'holding the body posted');
  });
}
