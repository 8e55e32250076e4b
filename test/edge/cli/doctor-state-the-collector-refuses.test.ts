/**
 * Doctor, run as the service user as the install step runs it, passes the state only as the collector
 * will take it. What a root run (`sudo lintel-edge run`) leaves in the service user's state directory (a
 * device.key or zones.sqlite root owns) and a device key restored as hex text (64 bytes) each stop the
 * collector at start with exit 2; doctor used to pass all three. Each case runs doctor, then the
 * collector, over the same state: doctor's FAIL names the file (and its owner), and the collector
 * indeed refuses it.
 */
import t, { type Test } from 'tap';
import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { loadOrCreateDeviceKey } from '../../../edge/src/zones/device-key.js';
import { openSqliteZoneStore } from '../../../edge/src/zones/store.js';
import { logsOf, startCli, until, writeSilentCollectorConfig, type Child } from './building-config.js';

const NOBODY = 65534;
/** As the service user would run it: nobody, with no supplementary groups, the environment kept. */
const AS_NOBODY = ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups'];
/** Through env(1) without NODE_OPTIONS: the test runner's process-info hook stays out of the child. */
const WITHOUT_TEST_HOOK = ['/usr/bin/env', '-u', 'NODE_OPTIONS'];
const AS_SERVICE_USER = [...AS_NOBODY, ...WITHOUT_TEST_HOOK];

/** A state directory the service user (nobody) owns, as the install step makes it, and a config it can read. */
async function serviceUsersState(t: Test): Promise<{ state: string; config: string }> {
  const dir = t.testdir({});
  const state = join(dir, 'state');
  mkdirSync(state, { mode: 0o700 });
  chownSync(state, NOBODY, NOBODY);
  return { state, config: await writeSilentCollectorConfig(dir, state, 0o644) };
}

function killAtTeardown(t: Test, child: Child): Child {
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
  return child;
}

/** Doctor's `state` lines, run as the service user. */
async function doctorState(t: Test, config: string): Promise<string[]> {
  const child = killAtTeardown(t, startCli(['doctor', '--config', config], {}, AS_SERVICE_USER));
  await child.exited;
  t.comment(child.stdout());
  return child.stdout().split('\n').filter((line) => /^\S+ +state /.test(line));
}

/** The collector over the same state, as the unit runs it: its exit code and stderr. */
async function collectorStart(t: Test, config: string): Promise<{ code: number | null; stderr: string }> {
  const child = killAtTeardown(t, startCli(['run', '--config', config], {}, AS_SERVICE_USER));
  await until(() => child.process.exitCode !== null || logsOf(child).some((l) => l.msg === 'collector started'), 30_000);
  if (child.process.exitCode === null) child.process.kill('SIGTERM');
  return { code: await child.exited, stderr: child.stderr() };
}

const quoted = (text: string) => text.replace(/[.()]/g, '\\$&');

t.test('state the service user owns, as the collector leaves it: doctor passes it', async (t) => {
  const { state, config } = await serviceUsersState(t);
  const first = await collectorStart(t, config);
  t.equal(first.code, 0, `the collector ran and stopped cleanly (stderr: ${first.stderr.slice(0, 500)})`);
  t.match(await doctorState(t, config), [new RegExp(`^ok {3}state {5}${quoted(state)} writable; device key readable, 32 bytes, mode 600; ledger \\d+ entries, chain intact$`)]);
});

t.test('a device.key root owns (mode 600) in the service user’s directory: doctor fails it, naming the owner', async (t) => {
  const { state, config } = await serviceUsersState(t);
  const key = join(state, 'device.key');
  loadOrCreateDeviceKey(key);

  t.same(await doctorState(t, config), [
    `FAIL state     cannot read the device key file ${key}: EACCES: it is owned by root (uid 0), mode 600; this process runs as nobody (uid 65534); run as the file's owner, or chown it to the service user`,
  ]);
  const { code, stderr } = await collectorStart(t, config);
  t.equal(code, 2, 'the collector refuses it too');
  t.match(stderr, `cannot read the device key file ${key}: EACCES`);
});

t.test('a device key restored as hex text (64 bytes): doctor fails it as the collector does', async (t) => {
  const { state, config } = await serviceUsersState(t);
  const key = join(state, 'device.key');
  writeFileSync(key, randomBytes(32).toString('hex'), { mode: 0o600 });
  chownSync(key, NOBODY, NOBODY);

  const refusal = `device key file ${key} holds 64 bytes, expected 32; remove it to generate a new key (tracked devices will be forgotten)`;
  t.same(await doctorState(t, config), [`FAIL state     ${refusal}`]);
  const { code, stderr } = await collectorStart(t, config);
  t.equal(code, 2, 'the collector refuses it too');
  t.match(stderr, refusal);
});

t.test('a zones.sqlite root owns (mode 644) in the service user’s directory: doctor fails it, naming the owner', async (t) => {
  const { state, config } = await serviceUsersState(t);
  const key = join(state, 'device.key');
  loadOrCreateDeviceKey(key);
  chownSync(key, NOBODY, NOBODY);
  const zones = join(state, 'zones.sqlite');
  openSqliteZoneStore(zones).close();

  t.same(await doctorState(t, config), [
    `FAIL state     cannot write ${zones} (EACCES): it is owned by root (uid 0), mode 644; this process runs as nobody (uid 65534); run as the file's owner, or chown it to the service user; the collector would not start (exit 2)`,
  ]);
  const { code, stderr } = await collectorStart(t, config);
  t.equal(code, 2, 'the collector refuses it too');
  t.match(stderr, `cannot write ${zones}: it is owned by root (uid 0), mode 644`);
});
