/**
 * Zone files damaged as failing storage damages them, and a collector over one with its log kept: for
 * the tests of saves that find the file corrupt (in this process, or in a child run in a private mount).
 */
import { closeSync, openSync, readdirSync, readSync, writeSync } from 'node:fs';
import { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import { createLogger } from '../../../../shared/logger.js';
import { EdgeDaemon, type DaemonConfig } from '../../../../edge/src/daemon.js';
import { createEdgeMetrics } from '../../../../edge/src/metrics.js';
import type { AccessPoint, ApPollResult, Poller } from '../../../../edge/src/poll/types.js';
import { openLedger } from '../../../../edge/src/report/ledger.js';
import { openSqliteZoneStore, type ZoneStore } from '../../../../edge/src/zones/store.js';
import { applyPoll, emptyTrackerState } from '../../../../edge/src/zones/tracker.js';
import type { ApObservation, TrackerConfig } from '../../../../edge/src/zones/types.js';
import { testHasher } from '../../support/daemon.js';

export const tracker: TrackerConfig = { switchPolls: 2, switchMarginDb: 8, frozenPolls: 4, absentPolls: 1, transitionWindowPolls: 5 };
export const heard = (ids: string[]): ApObservation[] => [{ ap: 'ap-1', zone: 'lobby', answered: true, stations: ids.map((device) => ({ device, rssiDbm: -50 })) }];
export const ids = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(6, '0')}-${'0'.repeat(40)}`);
/** The zone files set aside in `dir`. */
export const asideIn = (dir: string) => readdirSync(dir).filter((name) => /^zones\.sqlite\.unreadable-[0-9T-]+Z$/.test(name));

/**
 * A zone file bound to `k1` whose device table holds `kept` while many pages are free (a crowd saved,
 * then gone), then its first free-list page overwritten: reads never visit it, a write that needs a page does.
 */
export function fileWithDamagedFreeList(path: string, kept: string[]): void {
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

/**
 * Damages the zone file at `path` in place, as a failing card does, while the store may hold it open:
 * the device table's root is made a page past the file's end. The schema change reaches every
 * connection at its next statement, and each write to the table then fails with SQLITE_CORRUPT.
 */
export function damageDeviceTable(path: string): void {
  const db = new Database(path);
  try {
    db.unsafeMode(true);
    db.pragma('writable_schema = ON');
    db.prepare("UPDATE sqlite_schema SET rootpage = 1000000 WHERE type = 'table' AND name = 'tracked_devices'").run();
    const version = db.pragma('schema_version', { simple: true }) as number;
    db.pragma(`schema_version = ${version + 1}`);
  } finally {
    db.close();
  }
}

/** The device ids stored in `path`, read apart from any store. */
export function storedIds(path: string): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('SELECT device_id FROM tracked_devices ORDER BY device_id').all() as Array<{ device_id: string }>).map((r) => r.device_id);
  } finally {
    db.close();
  }
}

export interface LogLine {
  level: number;
  msg: string;
  setAsideAs?: string;
  error?: string;
}

/** The one AP of the collectors these tests run, in zone `lobby`; it is never polled over the network. */
export const LOBBY_AP: AccessPoint = { name: 'ap-lobby', zone: 'lobby', dialect: 'aruba-aos', target: { transport: 'snmp', host: '127.0.0.1', port: 161, version: '2c', community: 'x' } };

/** A collector of the lobby AP alone, with `rules` for its tracker. */
export function lobbyConfig(rules: TrackerConfig): DaemonConfig {
  return {
    buildingId: 'hq',
    pollIntervalMs: 1000,
    requestTimeoutMs: 500,
    zones: [{ id: 'lobby' }],
    tracker: rules,
    accessPoints: [LOBBY_AP],
    reportNames: { 'ap-lobby': 'ap-lobby' },
  };
}
const ap = LOBBY_AP;
const config = lobbyConfig(tracker);

export interface Collector {
  daemon: EdgeDaemon;
  zones: ZoneStore;
  /** Every line the collector logged, parsed. */
  lines: LogLine[];
  /** The ids of the devices its AP always lists, as the zone file stores them. */
  deviceIds: string[];
  close(): Promise<void>;
}

/**
 * A collector over the zone file at `zonesPath` (bound to `k1`, as fileWithDamagedFreeList leaves it)
 * and a ledger at `ledgerPath`, whose one AP always lists 300 stations.
 */
export function collectorOver(zonesPath: string, ledgerPath: string): Collector {
  const hasher = testHasher();
  const macs = Array.from({ length: 300 }, (_, i) => `02:00:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`);
  const lines: LogLine[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  const poller: Poller = {
    async pollAll(): Promise<ApPollResult[]> {
      return [{ ap: ap.name, zone: ap.zone, ok: true, durationMs: 1, stations: macs.map((mac) => ({ mac, rssiDbm: -50 })) }];
    },
    async close() {},
  };
  const zones = openSqliteZoneStore(zonesPath);
  zones.bindKey('k1');
  const ledger = openLedger(ledgerPath);
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
  return {
    daemon,
    zones,
    lines,
    deviceIds: macs.map((mac) => hasher.idOf(mac)).sort(),
    async close() {
      await daemon.stop();
      zones.close();
      ledger.close();
    },
  };
}
