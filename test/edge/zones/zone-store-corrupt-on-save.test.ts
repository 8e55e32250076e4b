/**
 * A zones.sqlite whose damage only a write reaches: it opens and loads (the device table is whole), but
 * its list of free pages is garbage, so the first save that needs a page fails with SQLITE_CORRUPT.
 * It is set aside as at open, and the state the save was given goes whole into a new file; the save
 * succeeds and so do the next ones. It once failed every save, every tick, for good.
 *
 * Starting over can fail in turn. A set-aside the directory refused (a filesystem remounted read-only
 * after errors), or a new file the disk could not take (no inodes left), once left the store on a
 * closed connection: every later save failed with "The database connection is not open", for good, and
 * a file set aside before the failure was never logged. Now the next save opens the file again and
 * writes the whole state. A new file that turns out corrupt too (failing storage) was set aside again
 * at every save, leaving one more copy of the state per poll; now at most one file is set aside.
 */
import t from 'tap';
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { openSqliteZoneStore } from '../../../edge/src/zones/store.js';
import { applyPoll } from '../../../edge/src/zones/tracker.js';
import type { TrackerState } from '../../../edge/src/zones/types.js';
import { REPO } from '../cli/building-config.js';
import { noFreeInodesTmpfs } from '../support/private-mount.js';
import { asideIn, collectorOver, damageDeviceTable, fileWithDamagedFreeList, heard, ids, storedIds, tracker, type LogLine } from './support/damaged-zone-file.js';

t.test('a zones.sqlite that loads but cannot be written is set aside at the save, and the new file gets the whole state', async (t) => {
  const dir = t.testdir({});
  const path = join(dir, 'zones.sqlite');
  const kept = ids(10, 'kept');
  fileWithDamagedFreeList(path, kept);
  const damaged = readFileSync(path);

  const store = openSqliteZoneStore(path);
  t.teardown(() => store.close());
  const loaded = store.load();
  t.same([...loaded.devices.keys()].sort(), kept, 'it loads: the device table is whole');
  t.equal(store.bindKey('k1'), 'kept');
  t.same(store.takeSetAside(), [], 'nothing set aside so far');

  const outcome = applyPoll(loaded, { aps: heard([...kept, ...ids(500, 'new')]) }, tracker);
  const at = Date.UTC(2026, 0, 5, 18);
  t.doesNotThrow(() => store.save(outcome, { at }), 'the save succeeds');
  t.equal(store.savedAt(), at, "the new file keeps the poll's time too");
  const setAside = store.takeSetAside();
  t.match(setAside, [{ path: new RegExp(`^${path.replace(/[.]/g, '\\.')}\\.unreadable-`), reason: /malformed/ }], 'the damaged file was set aside');
  t.same(asideIn(dir), [basename(setAside[0]!.path)]);
  t.same(readFileSync(setAside[0]!.path), damaged, 'with its bytes as they were');
  t.same(storedIds(path), [...outcome.state.devices.keys()].sort(), 'the new file holds every device in memory, the unchanged ones too');

  const next = applyPoll(outcome.state, { aps: heard(kept) }, tracker);
  store.save(next);
  t.same(store.takeSetAside(), [], 'the next save goes to the new file as any');
  store.close();
  const restarted = openSqliteZoneStore(path);
  t.teardown(() => restarted.close());
  t.equal(restarted.bindKey('k1'), 'kept', 'the new file is bound to the key');
  const state: TrackerState = restarted.load();
  t.same([...state.devices.keys()].sort(), kept, 'a restart comes back to the state of the last save');
  t.equal(state.poll, next.state.poll);
});

const escaped = (path: string) => path.replace(/[.]/g, '\\.');
const saveFailures = (lines: LogLine[]) => lines.filter((l) => /cannot save the zone state/.test(l.msg));
const setAsideWarnings = (lines: LogLine[]) => lines.filter((l) => /zone state file was unreadable/.test(l.msg));

t.test('the collector logs the file set aside at a save, and no tick fails to save', async (t) => {
  const dir = t.testdir({});
  const path = join(dir, 'zones.sqlite');
  fileWithDamagedFreeList(path, []);
  const collector = collectorOver(path, join(dir, 'ledger.sqlite'));
  t.teardown(() => collector.close());

  for (let tick = 0; tick < 3; tick++) await collector.daemon.tick();
  t.same(saveFailures(collector.lines), [], 'every save succeeded');
  const warnings = setAsideWarnings(collector.lines);
  t.equal(warnings.length, 1, 'one file set aside, logged once');
  t.match(warnings[0], { level: 40, msg: /set aside and the state in memory was saved whole into a new file/, setAsideAs: new RegExp(`^${escaped(path)}\\.unreadable-`) });
  t.same(storedIds(path), collector.deviceIds, 'the new file holds the devices counted');
});

t.test('a file found corrupt at a save that cannot be set aside: saves fail until it can, then the next one sets it aside and writes the whole state', async (t) => {
  // Registered before the test directory, so it runs before tap removes it.
  let stateDir = '';
  t.teardown(() => {
    if (stateDir) execFileSync('chattr', ['-i', stateDir]);
  });
  const dir = t.testdir({});
  stateDir = join(dir, 'state');
  mkdirSync(stateDir);
  const path = join(stateDir, 'zones.sqlite');
  fileWithDamagedFreeList(path, []);
  const collector = collectorOver(path, join(dir, 'ledger.sqlite'));
  t.teardown(() => collector.close());

  // Immutable: no entry of the directory can be renamed (as root too), as on a filesystem remounted
  // read-only after errors; the file itself can still be written.
  execFileSync('chattr', ['+i', stateDir]);
  for (let tick = 0; tick < 3; tick++) await collector.daemon.tick();
  const failures = saveFailures(collector.lines);
  t.equal(failures.length, 3, 'each save fails');
  t.ok(
    failures.every((l) => /UnreadableZoneFileError \(EPERM\): .*zones\.sqlite is unreadable \(SQLITE_CORRUPT\) and cannot be set aside \(rename: EPERM\)/.test(l.error ?? '')),
    `each for the refused rename, none on a closed connection (${failures.find((l) => !/cannot be set aside/.test(l.error ?? ''))?.error ?? 'all so'})`,
  );
  t.same(asideIn(stateDir), [], 'nothing was set aside');

  execFileSync('chattr', ['-i', stateDir]);
  const logged = collector.lines.length;
  await collector.daemon.tick();
  const after = collector.lines.slice(logged);
  t.same(saveFailures(after), [], 'the save once the directory allows the rename succeeds');
  const warnings = setAsideWarnings(after);
  t.equal(warnings.length, 1, 'the set-aside is logged');
  t.match(warnings[0], { level: 40, msg: /set aside and the state in memory was saved whole into a new file/, setAsideAs: new RegExp(`^${escaped(path)}\\.unreadable-`) });
  t.ok(
    after.some((l) => l.msg === 'the zone state is saved again'),
    'and the save after the failed ones',
  );
  t.equal(asideIn(stateDir).length, 1);
  t.same(storedIds(path), collector.deviceIds, 'the new file holds the whole state');
  const restarted = openSqliteZoneStore(path);
  t.teardown(() => restarted.close());
  t.equal(restarted.bindKey('k1'), 'kept', 'bound to the key');
});

t.test('a new file found corrupt too (failing storage): saves fail, and no more than one file is ever set aside', async (t) => {
  const dir = t.testdir({});
  const path = join(dir, 'zones.sqlite');
  fileWithDamagedFreeList(path, []);
  const collector = collectorOver(path, join(dir, 'ledger.sqlite'));
  t.teardown(() => collector.close());

  await collector.daemon.tick();
  t.equal(asideIn(dir).length, 1, 'the first file is set aside, and the state saved into a new one');
  t.same(saveFailures(collector.lines), []);
  // The card damages whatever file it holds, before every tick.
  for (let tick = 0; tick < 6; tick++) {
    damageDeviceTable(path);
    await collector.daemon.tick();
  }
  t.equal(asideIn(dir).length, 1, 'no other file was set aside');
  t.equal(setAsideWarnings(collector.lines).length, 1);
  const failures = saveFailures(collector.lines);
  t.equal(failures.length, 6, 'each save fails');
  t.ok(
    failures.every((l) =>
      /UnreadableZoneFileError \(SQLITE_CORRUPT\): .*zones\.sqlite is unreadable \(SQLITE_CORRUPT\), and it is the new file made after the first was set aside: it is not set aside again/.test(l.error ?? ''),
    ),
    `each saying why (${failures.find((l) => !/not set aside again/.test(l.error ?? ''))?.error ?? 'all so'})`,
  );
});

t.test('a file set aside at a save on a disk with no inodes left for the new one: logged, and the first save once inodes are free writes the whole state', async (t) => {
  const dir = t.testdir({ disk: {}, seed: {} });
  const helper = new URL('./support/collector-out-of-inodes.ts', import.meta.url).pathname;
  const [command, ...args] = [
    ...noFreeInodesTmpfs(join(dir, 'disk'), join(dir, 'seed')),
    // The test runner's hooks stay out of the child.
    '/usr/bin/env',
    '-u',
    'NODE_OPTIONS',
    process.execPath,
    '--import',
    'tsx',
    helper,
    join(dir, 'disk'),
    join(dir, 'ledger.sqlite'),
  ] as [string, ...string[]];
  const child = spawn(command, args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  t.equal(code, 0, `the collector ran (stderr: ${err.slice(0, 600)})`);
  const result = JSON.parse(out) as { lines: LogLine[]; asideWhileFull: string[]; aside: string[]; stored: string[]; deviceIds: string[] };

  const disk = join(dir, 'disk');
  t.equal(result.asideWhileFull.length, 1, 'the corrupt file was set aside (a rename takes no inode)');
  const failed = result.lines.findIndex((l) => /cannot save the zone state/.test(l.msg));
  t.ok(failed >= 0, 'but the save failed: the new file could not be made');
  const warnings = setAsideWarnings(result.lines.slice(0, failed));
  t.equal(warnings.length, 1, 'the set-aside is logged with the failed save');
  t.match(warnings[0], { level: 40, msg: /set aside and the state in memory could not be saved into a new file yet/, setAsideAs: new RegExp(`^${escaped(join(disk, 'zones.sqlite'))}\\.unreadable-`) });
  t.notMatch(result.lines[failed]?.error ?? '', /not open/, 'the failure is the disk’s, not a closed connection');
  t.ok(
    result.lines.slice(failed + 1).some((l) => l.msg === 'the zone state is saved again'),
    'once inodes are free, the next save succeeds',
  );
  t.equal(setAsideWarnings(result.lines).length, 1, 'logged once');
  t.same(result.aside, result.asideWhileFull, 'nothing more set aside');
  t.same(result.stored, result.deviceIds, 'and the zone file holds the whole state');
});
