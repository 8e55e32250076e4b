/**
 * An EdgeDaemon for the edge's tick tests: a sqlite zone store and ledger in a fresh test directory,
 * metrics for the config's APs and zones, every tick report kept; stopped and closed at teardown.
 */
import { join } from 'node:path';
import type { Test } from 'tap';
import { silentLogger, type Logger } from '../../../shared/logger.js';
import { EdgeDaemon, type DaemonConfig, type TickReport } from '../../../edge/src/daemon.js';
import { createEdgeMetrics } from '../../../edge/src/metrics.js';
import type { Poller } from '../../../edge/src/poll/types.js';
import { openLedger, type Ledger } from '../../../edge/src/report/ledger.js';
import type { BatchPoster } from '../../../edge/src/report/poster.js';
import { createDeviceHasher, type DeviceHasher } from '../../../edge/src/zones/device-key.js';
import { openSqliteZoneStore } from '../../../edge/src/zones/store.js';

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
  const aps = config.accessPoints.map((ap) => config.reportNames[ap.name] ?? ap.name);
  const metrics = createEdgeMetrics({ aps, zones: config.zones.map((z) => z.id) }, { defaults: false });
  const reports: TickReport[] = [];
  const daemon = new EdgeDaemon({
    config,
    poller,
    hasher: testHasher(),
    zones,
    ledger,
    ...(options.poster ? { poster: options.poster } : {}),
    metrics,
    logger: options.logger ?? silentLogger(),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.ledgerRetentionMs !== undefined ? { ledgerRetentionMs: options.ledgerRetentionMs } : {}),
    onTick: (r) => reports.push(r),
  });
  t.teardown(async () => {
    await daemon.stop();
    zones.close();
    ledger.close();
  });
  return { daemon, zones, ledger, metrics, reports, dir };
}
