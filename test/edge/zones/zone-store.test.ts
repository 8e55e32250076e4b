import t, { type Test } from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { applyPoll, emptyTrackerState, zoneCounts } from '../../../edge/src/zones/tracker.js';
import { openSqliteZoneStore, type ZoneStore } from '../../../edge/src/zones/store.js';
import { createDeviceHasher } from '../../../edge/src/zones/device-key.js';
import { observe } from '../../../edge/src/zones/observe.js';
import type { ApObservation, TrackerConfig } from '../../../edge/src/zones/types.js';

const config: TrackerConfig = { switchPolls: 2, switchMarginDb: 8, frozenPolls: 4, absentPolls: 2, transitionWindowPolls: 5 };
const obs = (ap: string, zone: string, stations: Record<string, number> | null): ApObservation =>
  stations === null
    ? { ap, zone, answered: false }
    : { ap, zone, answered: true, stations: Object.entries(stations).map(([device, rssiDbm]) => ({ device, rssiDbm })) };

/** The contract every ZoneStore keeps; `reopen` gives a store over the same data (a restart). */
function contract(name: string, open: (t: Test) => { store: ZoneStore; reopen: () => ZoneStore }) {
  t.test(`${name}: saves each poll and loads the same state`, async (t) => {
    const { store } = open(t);
    t.same(store.load(), emptyTrackerState());
    let state = store.load();
    const polls = [
      [obs('ap-1', 'lobby', { a: -50, b: -60 }), obs('ap-2', 'cafe', { c: -55 })],
      [obs('ap-1', 'lobby', { a: -80 }), obs('ap-2', 'cafe', { a: -40, c: -55 })],
      [obs('ap-1', 'lobby', null), obs('ap-2', 'cafe', { a: -41, c: -57 })],
      [obs('ap-1', 'lobby', {}), obs('ap-2', 'cafe', { c: -57 })],
    ];
    for (const aps of polls) {
      const outcome = applyPoll(state, { aps }, config);
      store.save(outcome);
      state = outcome.state;
      const loaded = store.load();
      t.equal(loaded.poll, state.poll);
      t.same(Object.fromEntries(loaded.devices), Object.fromEntries(state.devices));
      t.same(loaded.transitions, state.transitions);
    }
    t.same(zoneCounts(store.load(), ['lobby', 'cafe']), { lobby: 0, cafe: 2 });
  });

  t.test(`${name}: state survives a restart`, async (t) => {
    const { store, reopen } = open(t);
    const outcome = applyPoll(emptyTrackerState(), { aps: [obs('ap-1', 'lobby', { a: -50 }), obs('ap-2', 'cafe', { b: -50 })] }, config);
    store.save(outcome);
    store.close();
    const again = reopen();
    const loaded = again.load();
    t.equal(loaded.poll, 1);
    t.same(zoneCounts(loaded, ['lobby', 'cafe']), { lobby: 1, cafe: 1 });
    again.close();
  });

  t.test(`${name}: keeps the wall-clock time of the poll saved last, for the next start to tell how long it was stopped`, async (t) => {
    const { store, reopen } = open(t);
    const outcome = applyPoll(emptyTrackerState(), { aps: [obs('ap-1', 'lobby', { a: -50 })] }, config);
    t.equal(store.savedAt(), undefined, 'nothing saved: no time');
    store.save(outcome, { at: Date.UTC(2026, 0, 5, 18) });
    t.equal(store.savedAt(), Date.UTC(2026, 0, 5, 18));
    store.save(outcome);
    t.equal(store.savedAt(), undefined, "a save without a time leaves no other poll's");
    store.save(outcome, { at: Date.UTC(2026, 0, 5, 18, 0, 10) });
    store.close();
    const again = reopen();
    t.equal(again.savedAt(), Date.UTC(2026, 0, 5, 18, 0, 10), 'across a restart');
    t.equal(again.bindKey('k2'), 'cleared');
    t.equal(again.savedAt(), undefined, 'cleared with the devices');
    again.close();
  });

  t.test(`${name}: a new device key clears devices that can never recur`, async (t) => {
    const { store } = open(t);
    t.equal(store.bindKey('k1'), 'kept');
    store.save(applyPoll(emptyTrackerState(), { aps: [obs('ap-1', 'lobby', { a: -50 })] }, config));
    t.equal(store.bindKey('k1'), 'kept');
    t.equal(store.load().devices.size, 1);
    t.equal(store.bindKey('k2'), 'cleared');
    t.equal(store.load().devices.size, 0);
  });
}

contract('sqlite store', (t) => {
  const dir = t.testdir({});
  const path = join(dir, 'zones.sqlite');
  const store = openSqliteZoneStore(path);
  t.teardown(() => store.close());
  return { store, reopen: () => openSqliteZoneStore(path) };
});

t.test('sqlite store: WAL journal and a migrations table, applied once', async (t) => {
  const dir = t.testdir({});
  const path = join(dir, 'zones.sqlite');
  openSqliteZoneStore(path).close();
  openSqliteZoneStore(path).close();
  const db = new Database(path, { readonly: true });
  t.teardown(() => db.close());
  t.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  const migrations = db.prepare('SELECT id FROM schema_migrations').all() as Array<{ id: string }>;
  t.same(
    migrations.map((m) => m.id),
    readdirSync(new URL('../../../edge/src/zones/migrations/', import.meta.url)).filter((f) => f.endsWith('.sql')).map((f) => f.replace(/\.sql$/, '')),
  );
});

t.test('sqlite store: only keyed hashes are stored, never a MAC', async (t) => {
  const dir = t.testdir({});
  const path = join(dir, 'zones.sqlite');
  const store = openSqliteZoneStore(path);
  const hasher = createDeviceHasher(Buffer.alloc(32, 7));
  const macs = ['3c:22:fb:01:02:03', '3C-22-FB-0A-0B-0C', 'a4b1.c2d3.e4f5'];
  const observation = observe(
    [{ ap: 'ap-1', zone: 'lobby', ok: true, durationMs: 3, stations: macs.map((mac, i) => ({ mac, rssiDbm: -50 - i })) }],
    hasher,
  );
  store.save(applyPoll(emptyTrackerState(), observation, config));
  store.close();
  const bytes = [path, `${path}-wal`]
    .map((p) => {
      try {
        return readFileSync(p).toString('latin1').toLowerCase();
      } catch {
        return '';
      }
    })
    .join('');
  for (const mac of macs) {
    const hex = mac.replace(/[^0-9a-f]/gi, '').toLowerCase();
    t.notOk(bytes.includes(hex), `no plain ${mac}`);
    t.notOk(bytes.includes(hex.match(/../g)!.join(':')), `no colon form of ${mac}`);
  }
  const db = new Database(path, { readonly: true });
  t.teardown(() => db.close());
  const ids = (db.prepare('SELECT device_id FROM tracked_devices').all() as Array<{ device_id: string }>).map((r) => r.device_id);
  t.equal(ids.length, 3);
  for (const id of ids) t.match(id, /^[0-9a-f]{64}$/);
});
