/**
 * A zones.sqlite that is not a database, or whose pages are damaged, is set aside (renamed, kept) and
 * the store starts over on a new file: zone state is rebuilt from the APs within a few polls
 * (docs/decisions/002). Also the complete save the daemon makes after failed ones.
 */
import t from 'tap';
import { closeSync, openSync, readdirSync, readFileSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { basename, join } from 'node:path';
import Database from 'better-sqlite3';
import { openSqliteZoneStore } from '../../../edge/src/zones/store.js';
import { applyPoll, emptyTrackerState } from '../../../edge/src/zones/tracker.js';
import type { ApObservation, TrackerConfig } from '../../../edge/src/zones/types.js';

const config: TrackerConfig = { switchPolls: 2, switchMarginDb: 8, frozenPolls: 4, absentPolls: 2, transitionWindowPolls: 5 };
const heard = (ids: string[]): ApObservation[] => [{ ap: 'ap-1', zone: 'lobby', answered: true, stations: ids.map((device) => ({ device, rssiDbm: -50 })) }];
const ids = (n: number, prefix = 'dev') => Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(6, '0')}-${'0'.repeat(40)}`);

const asideIn = (dir: string) => readdirSync(dir).filter((name) => /^zones\.sqlite\.unreadable-[0-9T-]+Z$/.test(name));

t.test('a zones.sqlite that is not a database is set aside, and the store starts empty on a new file', async (t) => {
  const dir = t.testdir({});
  const path = join(dir, 'zones.sqlite');
  const garbage = Buffer.from('this was never a SQLite file\n'.repeat(200));
  writeFileSync(path, garbage);

  const store = openSqliteZoneStore(path);
  t.teardown(() => store.close());
  t.same(store.load(), emptyTrackerState(), 'no devices: they are found again by the next polls');
  const setAside = store.takeSetAside();
  t.equal(setAside.length, 1, 'one file set aside');
  t.match(setAside[0], { path: new RegExp(`^${path.replace(/[.]/g, '\\.')}\\.unreadable-`), reason: /not a database/ });
  t.same(asideIn(dir), [basename(setAside[0]!.path)], 'kept beside it under a timestamped name');
  t.same(readFileSync(setAside[0]!.path), garbage, 'with its bytes as they were');
  t.same(store.takeSetAside(), [], 'each is reported once');

  store.bindKey('k1');
  store.save(applyPoll(emptyTrackerState(), { aps: heard(ids(3)) }, config));
  store.close();
  const again = openSqliteZoneStore(path);
  t.teardown(() => again.close());
  t.equal(again.load().devices.size, 3, 'the new file keeps the state as any does');
  t.equal(again.bindKey('k1'), 'kept');
  t.same(again.takeSetAside(), []);
});

t.test('damaged pages found when loading: the file is set aside and the load answers an empty state', async (t) => {
  const dir = t.testdir({});
  const path = join(dir, 'zones.sqlite');
  const first = openSqliteZoneStore(path);
  first.bindKey('k1');
  first.save(applyPoll(emptyTrackerState(), { aps: heard(ids(2000)) }, config));
  first.close();
  // The schema (page 1) stays readable; the device table's pages are overwritten.
  const size = statSync(path).size;
  const fd = openSync(path, 'r+');
  writeSync(fd, Buffer.alloc(size - 8 * 4096, 0xa5), 0, size - 8 * 4096, 8 * 4096);
  closeSync(fd);

  const store = openSqliteZoneStore(path);
  t.teardown(() => store.close());
  t.same(store.takeSetAside(), [], 'it opened: the damage is in the data');
  t.same(store.load(), emptyTrackerState());
  t.match(store.takeSetAside(), [{ reason: /malformed/ }]);
  t.equal(asideIn(dir).length, 1);
  t.equal(store.bindKey('k1'), 'kept', 'the new file is bound to the key the store was bound to');
});

t.test('a complete save leaves exactly the state’s devices in the file, whatever removals it missed', async (t) => {
  const path = join(t.testdir({}), 'zones.sqlite');
  const store = openSqliteZoneStore(path);
  t.teardown(() => store.close());
  const saved = applyPoll(emptyTrackerState(), { aps: heard(ids(50, 'old')) }, config);
  store.save(saved);
  // Polls whose saves were lost: every old device left, new ones came.
  let state = saved.state;
  for (let i = 0; i < config.absentPolls; i++) state = applyPoll(state, { aps: heard(ids(20, 'new')) }, config).state;
  const outcome = applyPoll(state, { aps: heard(ids(20, 'new')) }, config);
  t.same(outcome.removed, [], 'this poll itself removes nothing');

  store.save(outcome, { complete: true });
  const db = new Database(path, { readonly: true });
  t.teardown(() => db.close());
  const stored = (db.prepare('SELECT device_id FROM tracked_devices ORDER BY device_id').all() as Array<{ device_id: string }>).map((r) => r.device_id);
  t.same(stored, [...outcome.state.devices.keys()].sort());
});
