/**
 * A zones.sqlite that is a valid SQLite file but lacks a table or column the store prepares (a table
 * dropped by hand, a file a newer version migrated before a downgrade) once failed every start with a
 * plain SQLITE_ERROR ("no such table"): it was neither set aside as a damaged file is nor a start to fix,
 * so the unit restarted the collector every 5 s, counting nothing. It is now damaged like a corrupt
 * file: set aside (kept, as it was), and counting starts over on a new file. Through the collector's
 * start and tick over the real SQLite zone store.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import type { ApPollResult, Poller } from '../../../edge/src/poll/types.js';
import { openSqliteZoneStore } from '../../../edge/src/zones/store.js';
import { applyPoll, emptyTrackerState } from '../../../edge/src/zones/tracker.js';
import { collectorOn } from '../support/collector-on-file.js';
import { testHasher } from '../support/daemon.js';
import { asideIn, heard, ids, lobbyConfig, LOBBY_AP, tracker } from './support/damaged-zone-file.js';

const config = lobbyConfig(tracker);
const EVENING = ['02:00:00:00:00:01', '02:00:00:00:00:02', '02:00:00:00:00:03'];
const MORNING = ['02:00:00:00:00:04'];

/** The lobby AP listing `macs` at every poll (plain data, no network). */
function lobbyHearing(macs: string[]): Poller {
  const result: ApPollResult = { ap: LOBBY_AP.name, zone: LOBBY_AP.zone, ok: true, durationMs: 1, stations: macs.map((mac) => ({ mac, rssiDbm: -50 })) };
  return {
    async pollAll() {
      return [result];
    },
    async close() {},
  };
}

/** Runs `sql` on the file at `path` as someone editing it by hand would, apart from any store. */
function editByHand(path: string, sql: string): void {
  const db = new Database(path);
  try {
    db.exec(sql);
  } finally {
    db.close();
  }
}

t.test('a zones.sqlite whose device table was dropped: the collector starts, sets it aside and counts from scratch', async (t) => {
  const path = join(t.testdir({}), 'zones.sqlite');
  const evening = collectorOn(t, path, config, lobbyHearing(EVENING));
  await evening.daemon.tick();
  await evening.daemon.tick();
  await evening.stop();
  editByHand(path, 'DROP TABLE tracked_devices');
  const damaged = readFileSync(path);

  const morning = collectorOn(t, path, config, lobbyHearing(MORNING));
  const first = await morning.daemon.tick();
  await morning.stop();

  const aside = asideIn(dirname(path));
  t.equal(aside.length, 1, 'the damaged file is set aside');
  t.same(readFileSync(join(dirname(path), aside[0]!)), damaged, 'kept as it was');
  t.match(first, { poll: 1, tracked: 1, counts: { lobby: 1 }, stats: { heard: 1, arrived: 1 } }, 'counting starts over from what the AP reports now');
  const db = new Database(path, { readonly: true });
  t.teardown(() => db.close());
  t.same(db.prepare('SELECT device_id FROM tracked_devices').pluck().all(), [testHasher().idOf(MORNING[0]!)], 'the new zones.sqlite holds the devices heard since');
  t.equal(db.prepare("SELECT value FROM tracker_meta WHERE key = 'poll'").pluck().get(), '1');
});

t.test('a zones.sqlite lacking a column the store writes (a downgrade): set aside, the reason naming the file and the column', async (t) => {
  const path = join(t.testdir({}), 'zones.sqlite');
  const store = openSqliteZoneStore(path);
  store.bindKey('k1');
  store.save(applyPoll(emptyTrackerState(), { aps: heard(ids(3, 'dev')) }, tracker));
  store.close();
  // As a newer version might leave it: the device table rebuilt without a column this version writes.
  editByHand(
    path,
    `CREATE TABLE devices_next (device_id TEXT PRIMARY KEY, zone TEXT NOT NULL, ap TEXT NOT NULL, rssi_dbm REAL NOT NULL, challenger_zone TEXT,
       challenger_polls INTEGER NOT NULL DEFAULT 0, absent_polls INTEGER NOT NULL DEFAULT 0, last_heard_poll INTEGER NOT NULL) WITHOUT ROWID;
     INSERT INTO devices_next SELECT device_id, zone, ap, rssi_dbm, challenger_zone, challenger_polls, absent_polls, last_heard_poll FROM tracked_devices;
     DROP TABLE tracked_devices;
     ALTER TABLE devices_next RENAME TO tracked_devices;`,
  );

  const reopened = openSqliteZoneStore(path);
  t.teardown(() => reopened.close());
  t.same(reopened.load(), emptyTrackerState(), 'the store starts empty');
  const [setAside, ...more] = reopened.takeSetAside();
  t.same(more, [], 'one file set aside');
  t.match(setAside?.reason, new RegExp(`^${path.replace(/[.]/g, '\\.')} is damaged: .*frozen_polls`), 'the reason names the file and what it lacks');
  t.equal(reopened.bindKey('k1'), 'kept', 'the new file is a working one');
});
