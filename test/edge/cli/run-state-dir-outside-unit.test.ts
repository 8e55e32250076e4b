/**
 * Under the unit ($STATE_DIRECTORY set), a stateDir outside the unit's state directory is read-only
 * (ProtectSystem=strict, no ReadWritePaths= for it): `run` refuses at start with exit 2, naming both
 * directories and the two fixes, instead of failing at its first write with a bare EROFS. A stateDir
 * outside it that the unit may write (a drop-in's ReadWritePaths=) is used as configured.
 */
import t from 'tap';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { logsOf, startCli, until, writeSilentCollectorConfig } from './building-config.js';
import { readOnly } from '../support/private-mount.js';
import { OUTSIDE_TMP, scratchIn } from '../support/scratch-dir.js';

/** Through env(1) without NODE_OPTIONS: the test runner's process-info hook stays out of the child. */
const WITHOUT_TEST_HOOK = ['/usr/bin/env', '-u', 'NODE_OPTIONS'];

t.test('a stateDir the unit makes read-only: exit 2 at start, naming both directories and the fixes', async (t) => {
  const dir = t.testdir({ unit: {} });
  // Outside /tmp wherever the checkout is: under the unit a stateDir there is refused for another reason.
  const srv = scratchIn(t, OUTSIDE_TMP);
  const unitState = join(dir, 'unit');
  const stateDir = join(srv, 'lintel');
  const config = await writeSilentCollectorConfig(dir, stateDir);

  const child = startCli(['run', '--config', config], { STATE_DIRECTORY: unitState }, [...readOnly(srv), ...WITHOUT_TEST_HOOK]);
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
  t.equal(await child.exited, 2, `exit 2, which the unit does not restart (stderr: ${child.stderr().slice(0, 600)})`);
  const stderr = child.stderr();
  t.match(stderr, `stateDir ${stateDir} (set in ${config}) is outside the unit's state directory ${unitState} ($STATE_DIRECTORY)`, 'names both directories');
  t.match(stderr, /ProtectSystem=strict makes it read-only \(EROFS\)/, 'and why it cannot be written');
  t.match(stderr, `Remove stateDir from the config to keep the state in ${unitState}`, 'the first fix');
  t.match(stderr, `[Service] ReadWritePaths=${stateDir}`, 'the second: a drop-in');
  t.equal(logsOf(child).length, 0, 'refused before the collector logged anything');
  t.notOk(existsSync(stateDir), 'nothing was created');
});

t.test('a stateDir outside the unit’s that it may write (a ReadWritePaths= drop-in) is used', async (t) => {
  const dir = t.testdir({ unit: {} });
  const stateDir = join(scratchIn(t, OUTSIDE_TMP), 'lintel');
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const config = await writeSilentCollectorConfig(dir, stateDir);

  const child = startCli(['run', '--config', config], { STATE_DIRECTORY: join(dir, 'unit') }, WITHOUT_TEST_HOOK);
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
  t.ok(await until(() => logsOf(child).some((l) => l.msg === 'collector started') || child.process.exitCode !== null, 30_000), 'it starts or ends');
  t.equal(child.process.exitCode, null, `it runs (stderr: ${child.stderr().slice(0, 600)})`);
  child.process.kill('SIGTERM');
  t.equal(await child.exited, 0);
  t.ok(existsSync(join(stateDir, 'ledger.sqlite')), 'with its state in the configured stateDir');
});
