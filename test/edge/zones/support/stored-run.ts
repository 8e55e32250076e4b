/**
 * A run of polls kept as the daemon keeps it, for the tests of what survives a restart: every outcome
 * saved to a sqlite zone store in a fresh test directory, then the store closed and opened again.
 */
import { join } from 'node:path';
import type { Test } from 'tap';
import { openSqliteZoneStore, type ZoneStore } from '../../../../edge/src/zones/store.js';
import { applyPoll } from '../../../../edge/src/zones/tracker.js';
import type { ApObservation, TrackerConfig } from '../../../../edge/src/zones/types.js';
import { config } from './polls.js';

/**
 * Applies `polls` in turn from the stored (empty) state, saving each outcome, and returns the store
 * opened again after a close, as after a restart; it is closed at teardown.
 *
 * @example
 * const again = reopenedAfter(t, [home, d1InCafe], wide);
 * const loaded = again.load();
 */
export function reopenedAfter(t: Test, polls: ApObservation[][], cfg: TrackerConfig = config): ZoneStore {
  const path = join(t.testdir({}), 'zones.sqlite');
  const store = openSqliteZoneStore(path);
  let state = store.load();
  for (const aps of polls) {
    const outcome = applyPoll(state, { aps }, cfg);
    store.save(outcome);
    state = outcome.state;
  }
  store.close();
  const again = openSqliteZoneStore(path);
  t.teardown(() => again.close());
  return again;
}
