/**
 * An EdgeDaemon for the edge's tick tests: a sqlite zone store and ledger in a fresh test directory,
 * metrics for the config's APs and zones, every tick report kept; stopped and closed at teardown.
 */
import { join } from 'node:path';
import type { Test } from 'tap';
import { silentLogger, type Logger } from '../../../shared/logger.js';
import { EdgeDaemon, type DaemonConfig, type TickReport } from '../../../edge/src/daemon.js';
import { createEdgeMetrics, type EdgeMetrics } from '../../../edge/src/metrics.js';
import type { Poller } from '../../../edge/src/poll/types.js';
import { DEFAULT_TRACKER_CONFIG } from '../../../edge/src/zones/types.js';
import { openLedger, type Ledger } from '../../../edge/src/report/ledger.js';
import type { BatchPoster } from '../../../edge/src/report/poster.js';
import { createDeviceHasher, type DeviceHasher } from '../../../edge/src/zones/device-key.js';
import { openSqliteZoneStore, type ZoneStore } from '../../../edge/src/zones/store.js';

/** The device hasher every test daemon uses: a daemon started again over the same zone store must hash alike. */
export const testHasher = (): DeviceHasher => createDeviceHasher(Buffer.alloc(32, 1));

export interface DaemonOptions {
  /** Where batches go; without one they are kept in the ledger only. The caller closes it. */
  poster?: BatchPoster;
  /** Instead of a fresh ledger in the test directory; closed at teardown all the same. */
  ledger?: Ledger;
  /** Default: silent. */
  logger?: Logger;
  /** The daemon's wall clock (epoch ms); default Date.now. */
  clock?: () => number;
  /** Ledger entries older than this are pruned; default the daemon's. */
  ledgerRetentionMs?: number;
}

/**
 * An EdgeDaemon over the given stores as the tests make it: the test hasher, metrics for the config's
 * APs and zones, a silent logger unless told otherwise. The caller stops it and closes the stores.
 */
export function testDaemon(
  config: DaemonConfig,
  poller: Poller,
  stores: { zones: ZoneStore; ledger: Ledger },
  options: Omit<DaemonOptions, 'ledger'> = {},
  onTick?: (report: TickReport) => void,
): { daemon: EdgeDaemon; metrics: EdgeMetrics } {
  const aps = config.accessPoints.map((ap) => config.reportNames[ap.name] ?? ap.name);
  const metrics = createEdgeMetrics({ aps, zones: config.zones.map((z) => z.id) }, { defaults: false });
  const daemon = new EdgeDaemon({
    config,
    poller,
    hasher: testHasher(),
    ...stores,
    ...(options.poster ? { poster: options.poster } : {}),
    metrics,
    logger: options.logger ?? silentLogger(),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.ledgerRetentionMs !== undefined ? { ledgerRetentionMs: options.ledgerRetentionMs } : {}),
    ...(onTick ? { onTick } : {}),
  });
  return { daemon, metrics };
}

/**
 * Sets up a daemon over `config` and `poller`. Its teardown stops it and closes the zone store and
 * ledger; a poster the caller registered a close for before this call is closed after them.
 *
 * @example
 * const { daemon, reports } = setupDaemon(t, config, poller, { poster });
 */
export function setupDaemon(t: Test, config: DaemonConfig, poller: Poller, options: DaemonOptions = {}) {
  const dir = t.testdir({});
  const zones = openSqliteZoneStore(join(dir, 'zones.sqlite'));
  const ledger = options.ledger ?? openLedger(join(dir, 'ledger.sqlite'));
  const reports: TickReport[] = [];
  const { daemon, metrics } = testDaemon(config, poller, { zones, ledger }, options, (r) => reports.push(r));
  t.teardown(async () => {
    await daemon.stop();
    zones.close();
    ledger.close();
  });
  return { daemon, zones, ledger, metrics, reports, dir };
}

/**
 * One zone, `lobby`, with one AP, `ap-1`, whose poller hears `mac` at every tick: the smallest building a
 * tick can report from, for tests of what happens to the batch.
 */
export function oneApLobby(mac: string): { config: DaemonConfig; poller: Poller } {
  const config: DaemonConfig = {
    buildingId: 'hq',
    pollIntervalMs: 60_000,
    requestTimeoutMs: 1000,
    zones: [{ id: 'lobby' }],
    tracker: DEFAULT_TRACKER_CONFIG,
    accessPoints: [{ name: 'ap-1', zone: 'lobby', dialect: 'aruba-aos', target: { transport: 'snmp', host: '127.0.0.1', port: 161, version: '2c', community: 'x' } }],
    reportNames: { 'ap-1': 'ap-1' },
  };
  const poller: Poller = {
    pollAll: async () => [{ ap: 'ap-1', zone: 'lobby', ok: true, durationMs: 1, stations: [{ mac, rssiDbm: -50 }] }],
    close: async () => undefined,
  };
  return { config, poller };
}
