/**
 * `lintel-edge run` over a state it cannot use as it is:
 * - a zones.sqlite that is not a database, or lacks a table the collector needs, is set aside and the
 *   collector starts with no devices (they are found again within a few polls);
 * - a ledger.sqlite that is not a database, or lacks a table, is audit evidence: never set aside, the
 *   start fails (exit 2, which the unit does not restart) and says why. A missing table once failed as
 *   a plain SQLITE_ERROR, exit 1, which the unit restarted every 5 s for good;
 * - a ledger.sqlite root made (a `sudo lintel-edge doctor` on a fresh install) in the service user's
 *   directory: the collector, run as that user, fails at once (exit 2), naming the file's owner.
 */
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { chownSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { openSqliteZoneStore } from '../../../edge/src/zones/store.js';
import { CLI, logsOf, REPO, startCli, until, writeSilentCollectorConfig, type Child } from './building-config.js';

const NOBODY = 65534;

function killAtTeardown(t: Test, child: Child) {
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
}

t.test('a zones.sqlite that is not a database is set aside and the collector starts', async (t) => {
  const dir = t.testdir({ state: {} });
  const config = await writeSilentCollectorConfig(dir, join(dir, 'state'), 0o644);
  const zones = join(dir, 'state', 'zones.sqlite');
  const garbage = Buffer.from('\x00not a database, a torn copy\n'.repeat(100));
  writeFileSync(zones, garbage, { mode: 0o600 });

  const child = startCli(['run', '--config', config]);
  killAtTeardown(t, child);
  t.ok(await until(() => logsOf(child).some((l) => l.msg === 'tick') || child.process.exitCode !== null, 30_000), 'it ticks');
  t.equal(child.process.exitCode, null, `still running (stderr: ${child.stderr().slice(0, 500)})`);
  child.process.kill('SIGTERM');
  t.equal(await child.exited, 0);

  const logs = logsOf(child);
  const warning = logs.find((l) => typeof l.setAsideAs === 'string');
  t.match(warning, { level: 40, msg: /zone state file was unreadable.*set aside.*within a few polls/, reason: /not a database/ }, 'logged, with where the file went');
  t.match(logs.find((l) => l.msg === 'collector started'), { tracked: 0 }, 'started with no tracked devices');
  const aside = readdirSync(join(dir, 'state')).filter((name) => name.startsWith('zones.sqlite.unreadable-'));
  t.same(aside, [String(warning?.setAsideAs).split('/').at(-1)], 'the unreadable file is kept under the logged name');
  t.same(readFileSync(join(dir, 'state', aside[0]!)), garbage, 'as it was');
  const db = new Database(zones, { readonly: true });
  t.teardown(() => db.close());
  t.match(db.prepare("SELECT value FROM tracker_meta WHERE key = 'poll'").get(), { value: /^[1-9]\d*$/ }, 'the new zones.sqlite holds the polls since');
});

t.test('a ledger.sqlite that is not a database is not set aside: the start fails with exit 2, naming it', async (t) => {
  const dir = t.testdir({ state: {} });
  const config = await writeSilentCollectorConfig(dir, join(dir, 'state'), 0o644);
  const ledger = join(dir, 'state', 'ledger.sqlite');
  const garbage = Buffer.from('not a ledger\n'.repeat(100));
  writeFileSync(ledger, garbage, { mode: 0o600 });

  const child = startCli(['run', '--config', config]);
  killAtTeardown(t, child);
  t.equal(await child.exited, 2);
  t.match(child.stderr(), new RegExp(`cannot open the state in .*: cannot prepare ${ledger.replace(/[.]/g, '\\.')}: file is not a database`));
  t.same(readFileSync(ledger), garbage, 'the ledger is left as it is');
  t.same(
    readdirSync(join(dir, 'state')).filter((name) => name.startsWith('ledger.sqlite.')),
    [],
    'and nothing of it is set aside',
  );
});

t.test('a zones.sqlite whose device table was dropped by hand is set aside and the collector starts', async (t) => {
  const dir = t.testdir({ state: {} });
  const config = await writeSilentCollectorConfig(dir, join(dir, 'state'), 0o644);
  const zones = join(dir, 'state', 'zones.sqlite');
  dropTable(zones, openSqliteZoneStore, 'tracked_devices');

  const child = startCli(['run', '--config', config]);
  killAtTeardown(t, child);
  t.ok(await until(() => logsOf(child).some((l) => l.msg === 'tick') || child.process.exitCode !== null, 30_000), 'it ticks');
  t.equal(child.process.exitCode, null, `still running (stderr: ${child.stderr().slice(0, 500)})`);
  child.process.kill('SIGTERM');
  t.equal(await child.exited, 0);

  const warning = logsOf(child).find((l) => typeof l.setAsideAs === 'string');
  t.match(warning, { level: 40, reason: new RegExp(`^${zones.replace(/[.]/g, '\\.')} is damaged: no such table: tracked_devices`) }, 'logged, naming the file and the missing table');
  t.equal(readdirSync(join(dir, 'state')).filter((name) => name.startsWith('zones.sqlite.unreadable-')).length, 1, 'set aside');
});

t.test('a ledger.sqlite whose entries table was dropped by hand: exit 2, naming it and the table, the file left as it is', async (t) => {
  const dir = t.testdir({ state: {} });
  const config = await writeSilentCollectorConfig(dir, join(dir, 'state'), 0o644);
  const ledger = join(dir, 'state', 'ledger.sqlite');
  dropTable(ledger, openLedger, 'ledger_entries');
  const damaged = readFileSync(ledger);

  const child = startCli(['run', '--config', config]);
  killAtTeardown(t, child);
  t.equal(await child.exited, 2, `exit 2, which the unit does not restart (stderr: ${child.stderr().slice(0, 500)})`);
  t.match(child.stderr(), new RegExp(`cannot open the state in .*: ${ledger.replace(/[.]/g, '\\.')} is damaged: no such table: ledger_entries`));
  t.same(readFileSync(ledger), damaged, 'the ledger is left as it is');
  t.same(
    readdirSync(join(dir, 'state')).filter((name) => name.startsWith('ledger.sqlite')),
    ['ledger.sqlite'],
    'and nothing of it is set aside',
  );
});

t.test('a ledger root made in the service user’s state directory: exit 2 at once, naming its owner', async (t) => {
  const dir = t.testdir({});
  const config = await writeSilentCollectorConfig(dir, join(dir, 'state'), 0o644);
  chownSync(join(dir, 'community'), NOBODY, NOBODY);
  const state = join(dir, 'state');
  mkdirSync(state, { mode: 0o700 });
  chownSync(state, NOBODY, NOBODY);
  // What a doctor run as root leaves there: its probe, recorded in a ledger root owns, mode 644.
  const rootLedger = openLedger(join(state, 'ledger.sqlite'));
  rootLedger.setDelivery(rootLedger.append('{"batchId":"doctor-probe","readings":[]}', Date.now()).seq, 'rejected');
  rootLedger.close();

  const child = spawnAs(NOBODY, ['run', '--config', config]);
  killAtTeardown(t, child);
  t.ok(await until(() => child.process.exitCode !== null || logsOf(child).some((l) => l.msg === 'collector started'), 30_000), 'it ends or starts');
  t.equal(child.process.exitCode, 2, `exit 2, which the unit does not restart (stderr: ${child.stderr().slice(0, 500)})`);
  t.match(child.stderr(), /cannot write .*\/ledger\.sqlite: it is owned by root \(uid 0\), mode 644; this process runs as nobody \(uid 65534\); run as the file's owner, or chown it/);
});

/** Makes the file at `path` as `open` does, then drops `table` from it as someone editing it by hand would. */
function dropTable(path: string, open: (path: string) => { close(): void }, table: string): void {
  open(path).close();
  const db = new Database(path);
  try {
    db.exec(`DROP TABLE ${table}`);
  } finally {
    db.close();
  }
}

/** `lintel-edge <args>` through tsx as another user (the tests run as root). */
function spawnAs(uid: number, args: string[]): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: REPO, uid, gid: uid, env: { ...process.env, HOME: '/nonexistent' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { process: child, stdout: () => out, stderr: () => err, exited };
}
