/**
 * `lintel-edge simulate | head -3`: once the reader of stdout has gone, the run ends as on Ctrl-C and
 * removes its temporary state. The write that met the closed pipe (EPIPE) used to end the process with
 * an unhandled 'error' event and a stack trace, before any cleanup ran: the temporary state directory,
 * holding the building's SSH private key, SNMP keys and the device key, stayed behind.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { CREDENTIAL_FILES } from '../../../edge/src/simulate/index.js';
import { startCli, until } from './building-config.js';

t.test('simulate whose stdout reader has gone ends without a stack trace and removes its temporary state', async (t) => {
  // The child's own TMPDIR, so what it leaves there is known to be its own.
  const tmp = t.testdir({});
  // Through env(1) without NODE_OPTIONS: the test runner's process-info hook stays out of the child.
  const child = startCli(
    ['simulate', '--aps', '2', '--zones', '1', '--devices', '4', '--interval-ms', '100', '--output', 'lines'],
    { TMPDIR: tmp },
    ['/usr/bin/env', '-u', 'NODE_OPTIONS'],
  );
  t.teardown(() => {
    if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL');
  });
  const ticking = await until(() => /^tick 1 /m.test(child.stdout()) || child.process.exitCode !== null, 60_000);
  if (!ticking || !/^tick 1 /m.test(child.stdout())) {
    t.fail(`the simulation did not start: ${child.stderr().slice(0, 500)}`);
    return;
  }
  const stateDir = /state in (\S+) \(temporary\)/.exec(child.stdout())?.[1] ?? '';
  t.match(stateDir, `${tmp}/lintel-edge-sim-`, 'the state is in a temporary directory under TMPDIR');
  t.ok(existsSync(join(stateDir, 'building', CREDENTIAL_FILES.sshClientKey)), 'holding the building’s SSH private key while the run goes on');

  // The reader goes, as head does once it has its lines; the simulation is still ticking.
  child.process.stdout!.destroy();
  const code = await child.exited;
  t.equal(child.process.signalCode, null, 'not ended by a signal');
  t.equal(code, 0, 'the run ends as on Ctrl-C');
  t.notMatch(child.stderr(), /Unhandled|EPIPE|\n\s+at /, 'no unhandled error, no stack trace');
  t.notOk(existsSync(stateDir), 'the temporary state directory is removed');
  t.same(readdirSync(tmp).filter((name) => name.startsWith('lintel-edge-sim-')), [], 'nothing of the run left in TMPDIR');
});
