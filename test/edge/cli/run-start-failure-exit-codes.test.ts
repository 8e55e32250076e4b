/**
 * The exit code of a start that cannot open the state: 2 (the unit does not restart) only for what a
 * fix alone cures (a file read-only to the service user, not a database or damaged, also one that
 * lacks a table, an invalid device key, a permission), 1 (restarted) for what may clear by itself: a lock held past the busy timeout, a
 * full disk, an I/O error. A device.key that is a directory (EISDIR), or a symbolic link to nothing, is a
 * state to fix: exit 2.
 *
 * SQLite says SQLITE_CANTOPEN alike for a file it may not create and one it could not create for want
 * of inodes: only a directory that refuses the user (its access(2) answer) makes it exit 2, and a file
 * whose directory refuses its -wal and -shm is exit 2 too, naming the directory.
 */
import t from 'tap';
import { chownSync, copyFileSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { startFailureExitCode } from '../../../edge/src/commands/run.js';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { NativeAddonError } from '../../../edge/src/storage/native-addon.js';
import { StorageError } from '../../../edge/src/storage/sqlite.js';
import { DeviceKeyError, loadOrCreateDeviceKey } from '../../../edge/src/zones/device-key.js';
import { startCli, writeSilentCollectorConfig } from './building-config.js';
import { fullTmpfs, noFreeInodesTmpfs, readOnly } from '../support/private-mount.js';

const NOBODY = 65534;
/** As the service user would run it: nobody, with no supplementary groups, the environment kept. */
const AS_NOBODY = ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups'];

/** Through env(1) without NODE_OPTIONS: the test runner's process-info hook stays out of the child. */
const WITHOUT_TEST_HOOK = ['/usr/bin/env', '-u', 'NODE_OPTIONS'];

const errno = (code: string) => Object.assign(new Error(`${code}: failed, open '/var/lib/lintel-edge/zones.sqlite'`), { code });
const thrownBy = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('it did not throw');
};

t.test('what only a fix cures: exit 2', async (t) => {
  const dir = t.testdir({ 'not-a-ledger.sqlite': 'not a ledger\n'.repeat(100), 'short.key': 'too short', 'device.key': {} });
  symlinkSync(join(dir, 'moved-away.key'), join(dir, 'dangling.key'));
  openLedger(join(dir, 'ledger-without-checkpoint.sqlite')).close();
  const byHand = new Database(join(dir, 'ledger-without-checkpoint.sqlite'));
  byHand.exec('DROP TABLE ledger_checkpoint');
  byHand.close();
  const cases: Array<[string, unknown]> = [
    ['a ledger that is not a database', thrownBy(() => openLedger(join(dir, 'not-a-ledger.sqlite')))],
    ['a ledger that lacks a table (dropped by hand, or a downgrade)', thrownBy(() => openLedger(join(dir, 'ledger-without-checkpoint.sqlite')))],
    ['a file this user may not write', new StorageError('cannot write /s/ledger.sqlite: it is owned by root (uid 0), mode 644; …', 'SQLITE_READONLY')],
    ['a file moved away while open', new StorageError('cannot prepare /s/ledger.sqlite: attempt to write a readonly database', 'SQLITE_READONLY_DBMOVED')],
    ['a damaged database', new StorageError('cannot prepare /s/zones.sqlite: database disk image is malformed', 'SQLITE_CORRUPT')],
    ['a damaged index', new StorageError('cannot prepare /s/zones.sqlite: database disk image is malformed', 'SQLITE_CORRUPT_INDEX')],
    ['a file this user may not read', new StorageError('cannot open /s/ledger.sqlite: permission denied: it is owned by root (uid 0), mode 600; this process runs as nobody (uid 65534) (run as …)', 'SQLITE_CANTOPEN')],
    ['a directory this user may not create files in', new StorageError('cannot open /s/ledger.sqlite: cannot create it: /s is owned by root (uid 0), mode 755; …', 'SQLITE_CANTOPEN')],
    [
      'a file whose directory refuses its -wal and -shm',
      new StorageError('cannot prepare /s/zones.sqlite: unable to open database file: cannot create its -wal or -shm: /s refuses new files to this user (EACCES): …', 'SQLITE_CANTOPEN'),
    ],
    ['a file whose directory refuses its journal, as SQLite says it', new StorageError('cannot prepare /s/zones.sqlite: attempt to write a readonly database: …', 'SQLITE_READONLY_DIRECTORY')],
    ['a device key of the wrong length', thrownBy(() => loadOrCreateDeviceKey(join(dir, 'short.key')))],
    ['a device.key that is a directory', thrownBy(() => loadOrCreateDeviceKey(join(dir, 'device.key')))],
    ['a device.key that is a symbolic link to nothing', thrownBy(() => loadOrCreateDeviceKey(join(dir, 'dangling.key')))],
    ['a device key this user may not create', new DeviceKeyError('cannot create the device key file /s/device.key: EACCES', 'EACCES')],
    ['a state directory on a read-only mount', errno('EROFS')],
    ['a state directory this user may not write', errno('EACCES')],
    ['a state path through a file', errno('ENOTDIR')],
    ['an addon cache directory another user owns', new NativeAddonError('refusing to load the SQLite addon from /tmp/lintel-edge-998: …', 'LINTEL_ADDON_DIR_REFUSED')],
    // As the executable's banner refuses the same directory for the data it unpacks (edge/build/banner.mjs).
    ['a data cache directory others may write', Object.assign(new Error('refusing to unpack data into /tmp: …'), { name: 'CacheDirectoryError', code: 'LINTEL_ADDON_DIR_REFUSED' })],
  ];
  for (const [what, err] of cases) t.equal(startFailureExitCode(err), 2, what);
});

t.test('what may clear by itself: exit 1, which the unit restarts', async (t) => {
  const cases: Array<[string, unknown]> = [
    ['a lock held past the busy timeout', new StorageError('cannot prepare /s/ledger.sqlite: database is locked', 'SQLITE_BUSY')],
    ['a table lock', new StorageError('cannot prepare /s/ledger.sqlite: database table is locked', 'SQLITE_LOCKED')],
    ['a full disk, as SQLite says it', new StorageError('cannot prepare /s/ledger.sqlite: database or disk is full', 'SQLITE_FULL')],
    ['a failed write', new StorageError('cannot prepare /s/ledger.sqlite: disk I/O error', 'SQLITE_IOERR_WRITE')],
    ['a failed fsync', new StorageError('cannot prepare /s/ledger.sqlite: disk I/O error', 'SQLITE_IOERR_FSYNC')],
    ['no memory', new StorageError('cannot prepare /s/ledger.sqlite: out of memory', 'SQLITE_NOMEM')],
    ['a file that cannot be opened for no known lasting reason', new StorageError('cannot open /s/ledger.sqlite: unable to open database file (missing, or permission denied)', 'SQLITE_CANTOPEN')],
    ['a file that cannot be created with no inodes left', new StorageError('cannot open /s/zones.sqlite: unable to open database file (the filesystem of /s has no free inodes)', 'SQLITE_CANTOPEN')],
    [
      'a file that cannot be created in a directory that allows it',
      new StorageError('cannot open /s/zones.sqlite: unable to open database file (/s allows new files: a cause that may pass, such as a quota or too many open files)', 'SQLITE_CANTOPEN'),
    ],
    ['a device key on a full disk', new DeviceKeyError('cannot create the device key file /s/device.key: ENOSPC', 'ENOSPC')],
    ['a device key read failing', new DeviceKeyError('cannot read the device key file /s/device.key: EIO', 'EIO')],
    ['a full disk under the addon', errno('ENOSPC')],
    ['an I/O error', errno('EIO')],
    ['a quota', errno('EDQUOT')],
    ['too many open files', errno('EMFILE')],
    ['an addon the loader refused', new NativeAddonError('cannot load the SQLite addon unpacked to /tmp/lintel-edge-0/better_sqlite3-0123456789abcdef.node (…)', 'LINTEL_ADDON_UNLOADABLE')],
    ['anything else', new Error('something unforeseen')],
  ];
  for (const [what, err] of cases) t.equal(startFailureExitCode(err), 1, what);
});

t.test('run on a full disk: exit 1, so the unit tries again once there is room', async (t) => {
  const dir = t.testdir({ disk: {} });
  const stateDir = join(dir, 'disk', 'state');
  const config = await writeSilentCollectorConfig(dir, stateDir);
  const child = startCli(['run', '--config', config], {}, [...fullTmpfs(join(dir, 'disk')), ...WITHOUT_TEST_HOOK]);
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
  t.equal(await child.exited, 1, `exit 1 (stderr: ${child.stderr().slice(0, 600)})`);
  t.match(child.stderr(), `cannot open the state in ${stateDir}: cannot create the device key file ${join(stateDir, 'device.key')}: ENOSPC`);
});

t.test('run with a device.key that is a directory: exit 2, naming it', async (t) => {
  const dir = t.testdir({});
  const stateDir = join(dir, 'state');
  mkdirSync(join(stateDir, 'device.key'), { recursive: true, mode: 0o700 });
  const config = await writeSilentCollectorConfig(dir, stateDir);
  const child = startCli(['run', '--config', config], {}, WITHOUT_TEST_HOOK);
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
  t.equal(await child.exited, 2, `exit 2, which the unit does not restart (stderr: ${child.stderr().slice(0, 600)})`);
  t.match(child.stderr(), `cannot open the state in ${stateDir}: cannot read the device key file ${join(stateDir, 'device.key')}: EISDIR`);
});

t.test('run with a device.key that is a symbolic link to nothing: exit 2, naming the link', async (t) => {
  const dir = t.testdir({});
  const stateDir = join(dir, 'state');
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  symlinkSync(join(dir, 'moved-away.key'), join(stateDir, 'device.key'));
  const config = await writeSilentCollectorConfig(dir, stateDir);
  const child = startCli(['run', '--config', config], {}, WITHOUT_TEST_HOOK);
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
  t.equal(await child.exited, 2, `exit 2, which the unit does not restart (stderr: ${child.stderr().slice(0, 600)})`);
  t.match(child.stderr(), `device key file ${join(stateDir, 'device.key')} is a symbolic link to ${join(dir, 'moved-away.key')}, which does not exist`);
});

/** A device key of the right length, as the collector made it. */
function writeDeviceKey(path: string): void {
  writeFileSync(path, randomBytes(32), { mode: 0o600 });
}

t.test('run over a missing zones.sqlite on a disk with no inodes left: exit 1, not a permission to fix', async (t) => {
  const dir = t.testdir({ disk: {}, seed: { state: {} } });
  writeDeviceKey(join(dir, 'seed', 'state', 'device.key'));
  const stateDir = join(dir, 'disk', 'state');
  const config = await writeSilentCollectorConfig(dir, stateDir);
  const child = startCli(['run', '--config', config], {}, [...noFreeInodesTmpfs(join(dir, 'disk'), join(dir, 'seed')), ...WITHOUT_TEST_HOOK]);
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
  t.equal(await child.exited, 1, `exit 1, so the unit tries again once inodes are freed (stderr: ${child.stderr().slice(0, 600)})`);
  t.match(child.stderr(), `cannot open the state in ${stateDir}: cannot open ${join(stateDir, 'zones.sqlite')}: unable to open database file (the filesystem of ${stateDir} has no free inodes)`);
  t.notMatch(child.stderr(), /cannot create it|owned by/, 'the directory, which this user may write, is not blamed');
});

/**
 * A state directory the service user may not write (root's, mode 755) holding the user's own device
 * key and zones.sqlite, and, with `leftWal`, the -wal a crash left without its -shm.
 */
function foreignDirectoryState(dir: string, leftWal: boolean): string {
  const stateDir = join(dir, 'state');
  mkdirSync(stateDir, { mode: 0o755 });
  writeDeviceKey(join(stateDir, 'device.key'));
  const source = join(dir, 'source.sqlite');
  const db = new Database(source);
  db.pragma('journal_mode = WAL');
  db.pragma('wal_autocheckpoint = 0');
  db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)');
  // Copied while open: the file and its -wal as a crash leaves them.
  copyFileSync(source, join(stateDir, 'zones.sqlite'));
  if (leftWal) copyFileSync(`${source}-wal`, join(stateDir, 'zones.sqlite-wal'));
  db.close();
  for (const file of ['device.key', 'zones.sqlite', ...(leftWal ? ['zones.sqlite-wal'] : [])]) chownSync(join(stateDir, file), NOBODY, NOBODY);
  return stateDir;
}

/** A config the service user may read (writeSilentCollectorConfig's files are root's, mode 600). */
async function nobodysConfig(dir: string, stateDir: string): Promise<string> {
  const config = await writeSilentCollectorConfig(dir, stateDir);
  for (const file of [config, join(dir, 'community')]) chownSync(file, NOBODY, NOBODY);
  return config;
}

t.test('run as the service user over its zones.sqlite in a directory it may not write: exit 2, naming the directory', async (t) => {
  for (const leftWal of [true, false]) {
    await t.test(leftWal ? 'a -wal left without its -shm (SQLITE_CANTOPEN)' : 'no -wal (SQLITE_READONLY_DIRECTORY)', async (t) => {
      const dir = t.testdir({});
      const stateDir = foreignDirectoryState(dir, leftWal);
      const config = await nobodysConfig(dir, stateDir);
      const child = startCli(['run', '--config', config], {}, [...AS_NOBODY, ...WITHOUT_TEST_HOOK]);
      t.teardown(() => {
        if (child.process.exitCode === null) child.process.kill('SIGKILL');
      });
      t.equal(await child.exited, 2, `exit 2, which the unit does not restart (stderr: ${child.stderr().slice(0, 800)})`);
      t.match(
        child.stderr(),
        `cannot create its -wal or -shm: ${stateDir} refuses new files to this user (EACCES): it is owned by root (uid 0), mode 755; this process runs as nobody (uid 65534); run as the directory's owner, or make it the service user's (install -d -m 0700 -o lintel-edge -g lintel-edge ${stateDir})`,
      );
      t.notMatch(child.stderr(), /run as the file's owner/, 'the file is this user’s: its directory is what to fix');
    });
  }
});

t.test('run over a missing zones.sqlite in a stateDir on a read-only mount: exit 2, the directory named', async (t) => {
  const dir = t.testdir({ state: {} });
  const stateDir = join(dir, 'state');
  writeDeviceKey(join(stateDir, 'device.key'));
  const config = await writeSilentCollectorConfig(dir, stateDir);
  const child = startCli(['run', '--config', config], {}, [...readOnly(stateDir), ...WITHOUT_TEST_HOOK]);
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
  t.equal(await child.exited, 2, `exit 2 (stderr: ${child.stderr().slice(0, 600)})`);
  t.match(child.stderr(), `cannot open ${join(stateDir, 'zones.sqlite')}: cannot create it: ${stateDir} refuses new files to this user (EROFS)`);
});
