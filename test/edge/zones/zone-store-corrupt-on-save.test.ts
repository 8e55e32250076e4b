/**
 * A zones.sqlite whose damage only a write reaches: it opens and loads (the device table is whole), but
 * its list of free pages is garbage, so the first save that needs a page fails with SQLITE_CORRUPT.
 * It is set aside as at open, and the state the save was given goes whole into a new file; the save
 * succeeds and so do the next ones. It once failed every save, every tick, for good.
 */
import t from 'tap';
import { closeSync, openSync, readdirSync, readFileSync, readSync, writeSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import { createLogger } from '../../../shared/logger.js';
import { EdgeDaemon, type DaemonConfig } from '../../../edge/src/daemon.js';
import { createEdgeMetrics } from '../../../edge/src/metrics.js';
import type { AccessPoint, ApPollResult, Poller } from '../../../edge/src/poll/types.js';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { openSqliteZoneStore } from '../../../edge/src/zones/store.js';
import { applyPoll, emptyTrackerState } from '../../../edge/src/zones/tracker.js';
import type { ApObservation, TrackerConfig, TrackerState } from '../../../edge/src/zones/types.js';
import { testHasher } from '../support/daemon.js';

const tracker: TrackerConfig = { switchPolls: 2, switchMarginDb: 8, frozenPolls: 4, absentPolls: 1, transitionWindowPolls: 5 };
const heard = (ids: string[]): ApObservation[] => [{ ap: 'ap-1', zone: 'lobby', answered: true, stations: ids.map((device) => ({ device, rssiDbm: -50 })) }];
const ids = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(6, '0')}-${'0'.repeat(40)}`);
const asideIn = (dir: string) => readdirSync(dir).filter((name) => /^zones\.sqlite\.unreadable-[0-9T-]+Z$/.test(name));

/**
 * A zone file bound to `k1` whose device table holds `kept` while many pages are free (a crowd saved,
 * then gone), then its first free-list page overwritten: reads never visit it, a write that needs a page does.
 */
function fileWithDamagedFreeList(path: string, kept: string[]): void {
  const store = openSqliteZoneStore(path);
  store.bindKey('k1');
  const crowd = applyPoll(emptyTrackerState(), { aps: heard(ids(2000, 'crowd')) }, tracker);
  store.save(crowd);
  store.save(applyPoll(crowd.state, { aps: heard(kept) }, tracker));
  store.close();
  const fd = openSync(path, 'r+');
  try {
    const header = Buffer.alloc(100);
    readSync(fd, header, 0, 100, 0);
    const pageSize = header.readUInt16BE(16);
    const firstTrunk = header.readUInt32BE(32);
    if (firstTrunk === 0 || header.readUInt32BE(36) === 0) throw new Error('the setup left no free page');
    writeSync(fd, Buffer.alloc(pageSize, 0xff), 0, pageSize, (firstTrunk - 1) * pageSize);
  } finally {
    closeSync(fd);
  }
}

/** The device ids stored in `path`, read apart from any store. */
function storedIds(path: string): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('SELECT device_id FROM tracked_devices ORDER BY device_id').all() as Array<{ device_id: string }>).map((r) => r.device_id);
  } finally {
    db.close();
  }
}

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
  t.doesNotThrow(() => store.save(outcome), 'the save succeeds');
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

const ap: AccessPoint = { name: 'ap-lobby', zone: 'lobby', dialect: 'aruba-aos', target: { transport: 'snmp', host: '127.0.0.1', port: 161, version: '2c', community: 'x' } };
const config: DaemonConfig = {
  buildingId: 'hq',
  pollIntervalMs: 1000,
  requestTimeoutMs: 500,
  zones: [{ id: 'lobby' }],
  tracker,
  accessPoints: [ap],
  reportNames: { 'ap-lobby': 'ap-lobby' },
};

t.test('the collector logs the file set aside at a save, and no tick fails to save', async (t) => {
  const dir = t.testdir({});
  const path = join(dir, 'zones.sqlite');
  const hasher = testHasher();
  const macs = Array.from({ length: 300 }, (_, i) => `02:00:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`);
  fileWithDamagedFreeList(path, []);
  const lines: Array<{ level: number; msg: string; setAsideAs?: string }> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line));
      done();
    },
  });
  const poller: Poller = {
    async pollAll(): Promise<ApPollResult[]> {
      return [{ ap: ap.name, zone: ap.zone, ok: true, durationMs: 1, stations: macs.map((mac) => ({ mac, rssiDbm: -50 })) }];
    },
    async close() {},
  };
  const zones = openSqliteZoneStore(path);
  const ledger = openLedger(join(dir, 'ledger.sqlite'));
  const daemon = new EdgeDaemon({
    config,
    poller,
    hasher,
    zones,
    ledger,
    metrics: createEdgeMetrics({ aps: [ap.name], zones: ['lobby'] }, { defaults: false }),
    logger: createLogger('lintel-edge', { destination }),
    clock: () => Date.UTC(2026, 0, 1),
  });
  t.teardown(async () => {
    await daemon.stop();
    zones.close();
    ledger.close();
  });

  for (let tick = 0; tick < 3; tick++) await daemon.tick();
  t.same(
    lines.filter((l) => /cannot save the zone state/.test(l.msg)),
    [],
    'every save succeeded',
  );
  const warnings = lines.filter((l) => /zone state file was unreadable/.test(l.msg));
  t.equal(warnings.length, 1, 'one file set aside, logged once');
  t.match(warnings[0], { level: 40, msg: /set aside and the state in memory was saved whole into a new file/, setAsideAs: new RegExp(`^${path.replace(/[.]/g, '\\.')}\\.unreadable-`) });
  t.same(storedIds(path), macs.map((mac) => hasher.idOf(mac)).sort(), 'the new file holds the devices counted');
});
