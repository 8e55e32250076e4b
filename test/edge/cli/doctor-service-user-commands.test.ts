/**
 * The commands doctor and the ledger commands print for the installer to run as the service user give
 * it the unit's cache directory (CACHE_DIRECTORY=/var/cache/lintel-edge), as the README's install step
 * does: from a shell, the executable would unpack its SQLite addon into /tmp, and a /tmp mounted noexec
 * refuses to load it, so the printed command failed where the unit would not. Another user's command
 * goes without it: the unit's cache directory is not that user's, and would be refused.
 *
 * The host has no `lintel-edge` user: each command runs with an /etc/passwd that names one, mounted in a
 * namespace of its own.
 */
import t, { type Test } from 'tap';
import { chownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { passwdFrom } from '../support/private-mount.js';
import { startCli, writeSilentCollectorConfig } from './building-config.js';

/** The service user's uid in the test's /etc/passwd; no account of the host's has it. */
const SERVICE_UID = 64990;
const NOBODY = 65534;
const AS_NOBODY = ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups'];
/** Through env(1) without NODE_OPTIONS: the test runner's process-info hook stays out of the child. */
const WITHOUT_TEST_HOOK = ['/usr/bin/env', '-u', 'NODE_OPTIONS'];

/** The host's /etc/passwd with a `lintel-edge` system user, written into `dir`; answers its path. */
function passwdWithServiceUser(t: Test, dir: string): string {
  const host = readFileSync('/etc/passwd', 'utf8');
  t.notMatch(host, /^lintel-edge:/m, 'the host has no lintel-edge user of its own');
  const path = join(dir, 'passwd');
  writeFileSync(path, `${host.endsWith('\n') ? host : `${host}\n`}lintel-edge:x:${SERVICE_UID}:${SERVICE_UID}::/nonexistent:/usr/sbin/nologin\n`, { mode: 0o644 });
  return path;
}

/** A 0700 state directory for the service user (chowned to it once its files are in). */
function stateDir(dir: string): string {
  const state = join(dir, 'state');
  mkdirSync(state, { mode: 0o700 });
  return state;
}

t.test('doctor run as root over the service user’s state directory prints the command with the unit’s cache directory', async (t) => {
  const dir = t.testdir({});
  const passwd = passwdWithServiceUser(t, dir);
  const state = stateDir(dir);
  chownSync(state, SERVICE_UID, SERVICE_UID);
  const config = await writeSilentCollectorConfig(dir, state);

  const child = startCli(['doctor', '--config', config], {}, [...passwdFrom(passwd), ...WITHOUT_TEST_HOOK]);
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
  t.equal(await child.exited, 1, `a problem (stderr: ${child.stderr().slice(0, 500)})`);
  t.comment(child.stdout());
  t.match(
    child.stdout(),
    `FAIL state     ${state} belongs to lintel-edge (uid ${SERVICE_UID}), not to this user, root (uid 0): ` +
      `a ledger doctor made there would be this user's, and the collector could not write it. ` +
      `Run doctor as its owner: runuser -u lintel-edge -- env STATE_DIRECTORY=${state} CACHE_DIRECTORY=/var/cache/lintel-edge lintel-edge doctor --config ${config} (nothing in it was read or written)\n`,
  );
});

t.test('a ledger command refused the service user’s state directory prints the command with the unit’s cache directory', async (t) => {
  const dir = t.testdir({});
  const passwd = passwdWithServiceUser(t, dir);
  const state = stateDir(dir);
  const path = join(state, 'ledger.sqlite');
  const ledger = openLedger(path);
  ledger.append('{"batchId":"b1","readings":[]}', Date.now());
  ledger.close();
  chownSync(path, SERVICE_UID, SERVICE_UID);
  chownSync(state, SERVICE_UID, SERVICE_UID);

  const child = startCli(['ledger', 'verify', '--ledger', path], {}, [...passwdFrom(passwd), ...AS_NOBODY, ...WITHOUT_TEST_HOOK]);
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
  t.equal(await child.exited, 2, `refused (stderr: ${child.stderr().slice(0, 500)})`);
  t.equal(
    child.stderr(),
    `lintel-edge: cannot read the ledger ${path}: permission denied (EACCES): ${state} is owned by lintel-edge (uid ${SERVICE_UID}), mode 700; this process runs as nobody (uid 65534); ` +
      `run as its owner: runuser -u lintel-edge -- env CACHE_DIRECTORY=/var/cache/lintel-edge lintel-edge ledger verify --ledger ${path}\n`,
  );
});
