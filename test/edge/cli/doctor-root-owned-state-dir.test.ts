/**
 * A state directory made with mkdir (root's) instead of the install step, and doctor run as the service
 * user: doctor said "Run doctor as its owner: runuser -u root -- … lintel-edge doctor …", and following it
 * made a root ledger.sqlite the collector could not write. Now the line names the install step that
 * gives the directory to the service user, and following it as printed (run by a real shell, as root)
 * lets the service user's doctor pass the state. A user doctor cannot tell for the service user, over
 * root's directory, gets the same step and the command to run doctor as the service user. (Root's
 * doctor over the service user's directory still says to run as its owner:
 * doctor-service-user-commands.test.ts.)
 *
 * The host has no `lintel-edge` user: each command runs with an /etc/passwd and /etc/group that name
 * one, mounted in a namespace of its own.
 */
import t, { type Test } from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startCli, writeSilentCollectorConfig } from './building-config.js';

/** The service user's uid and gid in the test's /etc/passwd and /etc/group; no account of the host's has them. */
const SERVICE_UID = 64990;
const NOBODY = 65534;
/** Through env(1) without NODE_OPTIONS: the test runner's process-info hook stays out of the child. */
const WITHOUT_TEST_HOOK = ['/usr/bin/env', '-u', 'NODE_OPTIONS'];

/** The host's /etc/passwd and /etc/group with a `lintel-edge` system user and group, written into `dir`. */
function accountsWithServiceUser(t: Test, dir: string): { passwd: string; group: string } {
  const write = (name: string, entry: string) => {
    const host = readFileSync(`/etc/${name}`, 'utf8');
    t.notMatch(host, /^lintel-edge:/m, `the host has no lintel-edge in /etc/${name}`);
    const path = join(dir, name);
    writeFileSync(path, `${host.endsWith('\n') ? host : `${host}\n`}${entry}\n`, { mode: 0o644 });
    return path;
  };
  return {
    passwd: write('passwd', `lintel-edge:x:${SERVICE_UID}:${SERVICE_UID}::/nonexistent:/usr/sbin/nologin`),
    group: write('group', `lintel-edge:x:${SERVICE_UID}:`),
  };
}

/** Runs the rest in a mount namespace of its own whose /etc/passwd and /etc/group are `accounts`. */
function withAccounts(accounts: { passwd: string; group: string }): string[] {
  return [
    'unshare', '--mount', '--propagation', 'private', '--',
    'sh', '-c', 'set -e; mount --bind "$1" /etc/passwd; mount --bind "$2" /etc/group; shift 2; exec "$@"', 'sh', accounts.passwd, accounts.group,
  ];
}

/** Runs `lintel-edge doctor --config <config>` as `uid`; resolves with its exit code and output. */
async function doctorAs(t: Test, uid: number, accounts: { passwd: string; group: string }, config: string): Promise<{ code: number | null; stdout: string }> {
  const child = startCli(['doctor', '--config', config], {}, [...withAccounts(accounts), 'setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', ...WITHOUT_TEST_HOOK]);
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
  const code = await child.exited;
  t.comment(child.stdout());
  if (child.stderr() !== '') t.comment(`stderr: ${child.stderr().slice(0, 500)}`);
  return { code, stdout: child.stdout() };
}

/** The state line doctor printed. */
const stateLine = (stdout: string) => stdout.split('\n').find((line) => /^(ok {2}|FAIL) state /.test(line)) ?? '';

/** A state directory as `mkdir` makes it: root's, mode 755. */
function mkdirState(dir: string): string {
  const state = join(dir, 'state');
  mkdirSync(state, { mode: 0o755 });
  return state;
}

t.test('doctor as the service user over a root-owned state directory names the install step, which works as printed', async (t) => {
  t.equal(process.geteuid?.(), 0, 'the tests run as root, and the state directory is made as root');
  const dir = t.testdir({});
  const accounts = accountsWithServiceUser(t, dir);
  const state = mkdirState(dir);
  const config = await writeSilentCollectorConfig(dir, state, 0o644);

  const refused = await doctorAs(t, SERVICE_UID, accounts, config);
  t.equal(refused.code, 1, 'a problem');
  const line = stateLine(refused.stdout);
  t.equal(
    line,
    `FAIL state     ${state} belongs to root (uid 0), not to this user, lintel-edge (uid ${SERVICE_UID}): the collector, running as the service user, lintel-edge, could not write it. ` +
      `Give it to the service user, as root: install -d -m 0700 -o lintel-edge -g lintel-edge ${state}; then run this doctor again (nothing in it was read or written)`,
    'the install step, not whom to run as',
  );
  t.notMatch(refused.stdout, /runuser -u root/, 'no advice to run doctor as root');
  t.same(readdirSync(state), [], 'nothing was created in it');

  // The step as printed, by a real shell, as root.
  const install = /as root: (.*); then run this doctor again/.exec(line)?.[1] ?? '';
  execFileSync(withAccounts(accounts)[0]!, [...withAccounts(accounts).slice(1), 'sh', '-c', install], { stdio: 'pipe' });
  t.same({ uid: statSync(state).uid, mode: statSync(state).mode & 0o777 }, { uid: SERVICE_UID, mode: 0o700 }, 'the directory is now the service user’s, mode 700');

  const passed = await doctorAs(t, SERVICE_UID, accounts, config);
  t.match(stateLine(passed.stdout), new RegExp(`^ok {3}state {5}${state.replace(/[.]/g, '\\.')} writable`), 'and the service user’s doctor passes the state');
});

t.test('doctor as a user it cannot tell for the service user, over a root-owned state directory, names the install step, not root', async (t) => {
  const dir = t.testdir({});
  const accounts = accountsWithServiceUser(t, dir);
  const state = mkdirState(dir);
  const config = await writeSilentCollectorConfig(dir, state, 0o644);

  const { code, stdout } = await doctorAs(t, NOBODY, accounts, config);
  t.equal(code, 1, 'a problem');
  t.equal(
    stateLine(stdout),
    `FAIL state     ${state} belongs to root (uid 0), not to this user, nobody (uid ${NOBODY}): the collector, running as the service user, lintel-edge, could not write it. ` +
      `Give it to the service user, as root: install -d -m 0700 -o lintel-edge -g lintel-edge ${state}; ` +
      `then run doctor as that user: runuser -u lintel-edge -- env STATE_DIRECTORY=${state} CACHE_DIRECTORY=/var/cache/lintel-edge lintel-edge doctor --config ${config} (nothing in it was read or written)`,
    'the install step, then the command to run doctor as the service user',
  );
  t.notMatch(stdout, /runuser -u root/, 'no advice to run doctor as root');
  t.same(readdirSync(state), [], 'nothing was created in it');
});
