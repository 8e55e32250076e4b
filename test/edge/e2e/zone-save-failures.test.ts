/**
 * While the zone store cannot save, devices keep coming and going: the collector keeps nothing of the
 * failed polls in memory (it once carried every departed device until a save succeeded, without bound,
 * under a 64 MB heap), and the first save that succeeds leaves exactly the in-memory devices on disk.
 */
import t from 'tap';
import { join } from 'node:path';
import { silentLogger } from '../../../shared/logger.js';
import { EdgeDaemon } from '../../../edge/src/daemon.js';
import { createEdgeMetrics } from '../../../edge/src/metrics.js';
import type { ApPollResult, Poller } from '../../../edge/src/poll/types.js';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { openSqliteZoneStore, type ZoneStore } from '../../../edge/src/zones/store.js';
import { DEFAULT_TRACKER_CONFIG } from '../../../edge/src/zones/types.js';
import { testHasher } from '../support/daemon.js';
import { LOBBY_AP, lobbyConfig, storedIds } from '../zones/support/damaged-zone-file.js';

const ap = LOBBY_AP;
// a device unheard once is gone: every poll below, the whole previous crowd leaves
const config = lobbyConfig({ ...DEFAULT_TRACKER_CONFIG, absentPolls: 1 });

const DEVICES_PER_POLL = 100;
const FAILED_POLLS = 30;

/** The MACs the lobby AP hears in poll `n`: a crowd of its own each poll. */
const crowd = (n: number) => Array.from({ length: DEVICES_PER_POLL }, (_, i) => `02:00:00:${[n >> 8, n & 255, i].map((b) => b.toString(16).padStart(2, '0')).join(':')}`);

/** A poller whose next answer is set by the test (plain data, no network). */
function crowdPoller(): Poller & { hear(macs: string[]): void } {
  let macs: string[] = [];
  return {
    hear(next) {
      macs = next;
    },
    async pollAll(): Promise<ApPollResult[]> {
      return [{ ap: ap.name, zone: ap.zone, ok: true, durationMs: 1, stations: macs.map((mac) => ({ mac, rssiDbm: -50 })) }];
    },
    async close() {},
  };
}

/** The real SQLite store, whose saves fail while `failing` is set (a disk that refuses writes). */
function failableStore(path: string): ZoneStore & { failing: boolean; saves: number } {
  const real = openSqliteZoneStore(path);
  const store = {
    ...real,
    failing: false,
    saves: 0,
    save(...args: Parameters<ZoneStore['save']>) {
      if (store.failing) throw new Error('SQLITE_FULL: database or disk is full');
      real.save(...args);
      store.saves++;
    },
  };
  return store;
}

/** Every collection the daemon holds, by field, with its size (its tracker state aside). */
function heldCollections(daemon: EdgeDaemon): Record<string, number> {
  const held: Record<string, number> = {};
  for (const [field, value] of Object.entries(daemon)) {
    if (field === 'state' || field === 'deps' || field === 'config') continue;
    if (Array.isArray(value)) held[field] = value.length;
    else if (value instanceof Map || value instanceof Set) held[field] = value.size;
  }
  return held;
}

t.test('failed zone saves keep nothing in memory; the next save leaves exactly the tracked devices on disk', async (t) => {
  const dir = t.testdir({});
  const path = join(dir, 'zones.sqlite');
  const zones = failableStore(path);
  const ledger = openLedger(join(dir, 'ledger.sqlite'));
  const poller = crowdPoller();
  const daemon = new EdgeDaemon({
    config,
    poller,
    hasher: testHasher(),
    zones,
    ledger,
    metrics: createEdgeMetrics({ aps: [ap.name], zones: ['lobby'] }, { defaults: false }),
    logger: silentLogger(),
    // a set clock, so every tick also records its batch as the collector does
    clock: () => Date.UTC(2026, 0, 1),
  });
  t.teardown(async () => {
    await daemon.stop();
    zones.close();
    ledger.close();
  });
  const hasher = testHasher();
  const idsOf = (macs: string[]) => macs.map((mac) => hasher.idOf(mac)).sort();

  poller.hear(crowd(0));
  await daemon.tick();
  t.same(storedIds(path), idsOf(crowd(0)), 'saved while the store works');
  const before = heldCollections(daemon);

  zones.failing = true;
  for (let n = 1; n <= FAILED_POLLS; n++) {
    poller.hear(crowd(n));
    const report = await daemon.tick();
    t.equal(report.tracked, DEVICES_PER_POLL, `poll ${n}: counting goes on in memory`);
  }
  t.same(storedIds(path), idsOf(crowd(0)), 'nothing reached the file meanwhile');
  // (FAILED_POLLS × DEVICES_PER_POLL devices left meanwhile; none of them may be held.)
  t.same(heldCollections(daemon), before, 'the daemon holds nothing more than before the failures');

  zones.failing = false;
  const last = crowd(FAILED_POLLS + 1);
  poller.hear(last);
  const report = await daemon.tick();
  t.equal(report.tracked, DEVICES_PER_POLL);
  t.same(storedIds(path), idsOf(last), 'the first save after the failures leaves exactly the tracked devices');

  const restarted = openSqliteZoneStore(path);
  t.teardown(() => restarted.close());
  t.same([...restarted.load().devices.keys()].sort(), idsOf(last), 'so a restart comes back to them, with no departed device');
});
