/**
 * The zone store keeps the zone pairs the ingest may still hold at a non-zero count (see
 * edge/src/zones/pairs-at-ingest.ts) with each poll, so that a restart after a lost batch still reports
 * their 0. Against the real SQLite zone store.
 */
import t from 'tap';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openSqliteZoneStore } from '../../../edge/src/zones/store.js';
import { applyPoll, emptyTrackerState } from '../../../edge/src/zones/tracker.js';
import { config, heard } from './support/polls.js';

const outcome = applyPoll(emptyTrackerState(), { aps: [heard('ap-l', 'lobby', { d1: -50 })] }, config);
const PAIRS = [
  { from: 'lobby', to: 'cafe' },
  { from: 'cafe', to: 'lobby' },
];

t.test('the pairs saved with a poll are loaded after a restart; a save without them leaves them as they were', async (t) => {
  const path = join(t.testdir({}), 'zones.sqlite');
  const store = openSqliteZoneStore(path);
  t.same(store.pairsAtIngest(), [], 'none before any save');
  store.save(outcome, { pairsAtIngest: PAIRS });
  store.save(outcome);
  store.close();
  const again = openSqliteZoneStore(path);
  t.teardown(() => again.close());
  t.same(again.pairsAtIngest(), PAIRS);
  again.save(outcome, { pairsAtIngest: [] });
  t.same(again.pairsAtIngest(), [], 'an empty list is saved as such');
});

t.test('a new device key clears the devices but keeps the pairs: they describe the ingest, not the devices', async (t) => {
  const store = openSqliteZoneStore(join(t.testdir({}), 'zones.sqlite'));
  t.teardown(() => store.close());
  store.bindKey('first');
  store.save(outcome, { pairsAtIngest: PAIRS });
  t.equal(store.bindKey('second'), 'cleared');
  t.equal(store.load().devices.size, 0);
  t.same(store.pairsAtIngest(), PAIRS);
});

t.test('a value that is not a list of pairs (edited by hand) is read as none', async (t) => {
  const path = join(t.testdir({}), 'zones.sqlite');
  const store = openSqliteZoneStore(path);
  store.save(outcome, { pairsAtIngest: PAIRS });
  store.close();
  for (const value of ['not json', '{"lobby":"cafe"}', '[["lobby"]]']) {
    const db = new Database(path);
    db.prepare("UPDATE tracker_meta SET value = ? WHERE key = 'pairs_at_ingest'").run(value);
    db.close();
    const again = openSqliteZoneStore(path);
    t.same(again.pairsAtIngest(), [], value);
    t.equal(again.load().devices.size, 1, 'the state loads all the same');
    again.close();
  }
});
