/**
 * `ledger verify|audit|export` over a ledger in a state directory this user may not enter (the service
 * user's, mode 700, read from an operator's shell): exit 2, naming the directory's owner and mode, this
 * user, and whom to run as. It used to say `no ledger at …`: existsSync answers false on EACCES too.
 * The command it prints to run as the owner keeps a ledger path with a space as one argument: printed
 * as it was, the shell split it and `ledger verify` was refused ("unexpected argument").
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { startCli } from './building-config.js';

const NOBODY = 65534;
/** As an operator's shell would run it: nobody, with no supplementary groups, the environment kept. */
const AS_NOBODY = ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups'];
/** Through env(1) without NODE_OPTIONS: the test runner's process-info hook stays out of the child. */
const WITHOUT_TEST_HOOK = ['/usr/bin/env', '-u', 'NODE_OPTIONS'];

t.test('a ledger in another user’s 0700 state directory: permission denied, its owner named, exit 2', async (t) => {
  t.equal(process.geteuid?.(), 0, 'the state directory is root’s, the command runs as nobody');
  const dir = t.testdir({});
  const state = join(dir, 'state');
  mkdirSync(state, { mode: 0o700 });
  chmodSync(state, 0o700);
  const path = join(state, 'ledger.sqlite');
  const ledger = openLedger(path);
  ledger.append('{"batchId":"b1","readings":[]}', Date.now());
  ledger.close();

  for (const action of ['verify', 'audit', 'export']) {
    const child = startCli(['ledger', action, '--ledger', path], {}, [...AS_NOBODY, ...WITHOUT_TEST_HOOK]);
    t.teardown(() => {
      if (child.process.exitCode === null) child.process.kill('SIGKILL');
    });
    const code = await child.exited;
    t.equal(code, 2, `ledger ${action}: exit 2 (stderr: ${child.stderr().slice(0, 600)})`);
    t.equal(
      child.stderr(),
      `lintel-edge: cannot read the ledger ${path}: permission denied (EACCES): ${state} is owned by root (uid 0), mode 700; this process runs as nobody (uid 65534); ` +
        `run as its owner: runuser -u root -- lintel-edge ledger ${action} --ledger ${path}\n`,
      `ledger ${action}: the directory, its owner and mode, this user, and whom to run as`,
    );
    t.notMatch(child.stderr(), /no ledger at/, `ledger ${action}: not a missing ledger`);
    t.equal(child.stdout(), '', `ledger ${action}: no report`);
  }

  const missing = startCli(['ledger', 'verify', '--ledger', join(dir, 'elsewhere', 'ledger.sqlite')], {}, [...AS_NOBODY, ...WITHOUT_TEST_HOOK]);
  t.equal(await missing.exited, 2);
  t.equal(missing.stderr(), `lintel-edge: no ledger at ${join(dir, 'elsewhere', 'ledger.sqlite')}\n`, 'a ledger that is not there is still no ledger');
});

/** The words a POSIX shell makes of `line`, each printed back by printf. */
const shellSplit = (line: string) => execFileSync('sh', ['-c', `printf '%s\\n' ${line}`], { encoding: 'utf8' }).split('\n').slice(0, -1);

t.test('the printed command to run as the owner keeps a ledger path with a space as one argument', async (t) => {
  t.equal(process.geteuid?.(), 0, 'the state directory is root’s, the command runs as nobody');
  const state = join(t.testdir({}), 'site one', 'state');
  mkdirSync(state, { recursive: true, mode: 0o700 });
  chmodSync(state, 0o700);
  const path = join(state, 'ledger.sqlite');
  const ledger = openLedger(path);
  ledger.append('{"batchId":"b1","readings":[]}', Date.now());
  ledger.close();

  const child = startCli(['ledger', 'verify', '--ledger', path], {}, [...AS_NOBODY, ...WITHOUT_TEST_HOOK]);
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
  t.equal(await child.exited, 2, `exit 2 (stderr: ${child.stderr().slice(0, 600)})`);
  const runAs = /run as its owner: (.*)$/m.exec(child.stderr())?.[1] ?? '';
  t.same(shellSplit(runAs), ['runuser', '-u', 'root', '--', 'lintel-edge', 'ledger', 'verify', '--ledger', path], `split by the shell: ${runAs}`);
});
