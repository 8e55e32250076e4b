/**
 * Under the unit ($STATE_DIRECTORY set), a stateDir in /tmp or /var/tmp is writable, but the unit's
 * PrivateTmp=yes makes those its own and systemd empties them at every stop: the device key, the zones
 * and the audit ledger were lost each time, silently. `run` now refuses one at start with exit 2, which
 * the unit does not restart, also when a link leads there. Outside the unit it is used as configured.
 */
import t, { type Test } from 'tap';
import { existsSync, realpathSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { logsOf, startCli, until, writeSilentCollectorConfig, type Child } from './building-config.js';
import { OUTSIDE_TMP, scratchIn } from '../support/scratch-dir.js';

/** Through env(1) without NODE_OPTIONS: the test runner's process-info hook stays out of the child. */
const WITHOUT_TEST_HOOK = ['/usr/bin/env', '-u', 'NODE_OPTIONS'];

/** Runs the collector on `config`; resolves once it started or ended. */
async function startCollector(t: Test, config: string, env: Record<string, string>): Promise<Child> {
  const child = startCli(['run', '--config', config], env, WITHOUT_TEST_HOOK);
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
  await until(() => logsOf(child).some((l) => l.msg === 'collector started') || child.process.exitCode !== null, 30_000);
  return child;
}

t.test('under the unit, a stateDir in /tmp: exit 2 at start, naming it and the fixes', async (t) => {
  const dir = t.testdir({ unit: {} });
  const unitState = join(dir, 'unit');
  const stateDir = join(scratchIn(t, '/tmp'), 'state');
  const config = await writeSilentCollectorConfig(dir, stateDir);

  const child = await startCollector(t, config, { STATE_DIRECTORY: unitState });
  t.equal(child.process.exitCode, 2, `exit 2, which the unit does not restart (stderr: ${child.stderr().slice(0, 600)})`);
  const stderr = child.stderr();
  t.match(stderr, `stateDir ${stateDir} (set in ${config}) is in /tmp, which the unit's PrivateTmp=yes makes its own and empties at every stop`, 'names it and why');
  t.match(stderr, 'the device key, the zones and the audit ledger would be lost each time', 'and what would be lost');
  t.match(stderr, `Remove stateDir from the config to keep the state in ${unitState} ($STATE_DIRECTORY)`, 'the first fix');
  t.match(stderr, 'or choose a directory outside /tmp and /var/tmp', 'the second');
  t.equal(logsOf(child).length, 0, 'refused before the collector logged anything');
  t.notOk(existsSync(stateDir), 'nothing was created');
});

t.test('under the unit, a stateDir reached through a link into /var/tmp is refused too', async (t) => {
  const dir = t.testdir({ unit: {} });
  // The link itself outside /tmp, wherever the checkout is: only where it leads is in /var/tmp.
  const link = join(scratchIn(t, OUTSIDE_TMP), 'srv');
  symlinkSync(scratchIn(t, '/var/tmp'), link);
  const stateDir = join(link, 'lintel', 'state');
  const config = await writeSilentCollectorConfig(dir, stateDir);

  const child = await startCollector(t, config, { STATE_DIRECTORY: join(dir, 'unit') });
  t.equal(child.process.exitCode, 2, `exit 2 (stderr: ${child.stderr().slice(0, 600)})`);
  t.match(child.stderr(), `stateDir ${stateDir} (set in ${config}) leads into /var/tmp (${realpathSync(link)}/lintel/state, through a symbolic link), which the unit's PrivateTmp=yes makes its own`, 'names it, where it leads, and why');
  t.notOk(existsSync(stateDir), 'nothing was created');
});

t.test('outside the unit, a stateDir in /tmp is used as configured', async (t) => {
  const dir = t.testdir({});
  const stateDir = join(scratchIn(t, '/tmp'), 'state');
  const config = await writeSilentCollectorConfig(dir, stateDir);

  const child = await startCollector(t, config, {});
  t.equal(child.process.exitCode, null, `it runs (stderr: ${child.stderr().slice(0, 600)})`);
  child.process.kill('SIGTERM');
  t.equal(await child.exited, 0);
  t.ok(existsSync(join(stateDir, 'ledger.sqlite')), 'with its state in the configured stateDir');
});
