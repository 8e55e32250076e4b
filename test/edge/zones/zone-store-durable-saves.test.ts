/**
 * The zone file holds the pairs still owed a 0, saved before the tick's batch is appended to the ledger
 * and posted. It was opened with `synchronous = NORMAL`, whose WAL commits a power cut may roll back:
 * a pair then posted with a count above 0 was in neither the saved transitions nor the saved pairs at
 * the next start, and its 0 was never reported. It is now opened durable (`synchronous = FULL`), as the
 * ledger is.
 *
 * A power cut cannot be simulated here, so this checks the setting that guards against it, on the
 * connection openZoneDatabase gives: the one the store opens every zone file with (see openTables in
 * zones/store.ts). It does not prove that the disk honours the fsync.
 */
import t from 'tap';
import { join } from 'node:path';
import { openZoneDatabase } from '../../../edge/src/zones/store.js';

// SQLite's codes of PRAGMA synchronous: 1 = NORMAL, 2 = FULL.
const FULL = 2;

t.test('the zone file is opened as durably as the ledger: every commit is on the disk when it returns', async (t) => {
  const dir = t.testdir({});
  const zones = openZoneDatabase(join(dir, 'zones.sqlite'));
  t.teardown(() => zones.close());
  t.equal(zones.pragma('journal_mode', { simple: true }), 'wal');
  t.equal(zones.pragma('synchronous', { simple: true }), FULL, 'synchronous = FULL');
  t.same(
    zones.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").pluck().all(),
    ['schema_migrations', 'tracked_devices', 'tracker_meta', 'zone_transitions'],
    'and migrated: the file the store reads and saves',
  );
});
