/**
 * A collector over a given zone file, as `lintel-edge run` starts one, for the tests of what a restart
 * keeps: start another over the same file after `stop()`. Its ledger is a fresh file beside the zone
 * file unless one is given.
 */
import { join } from 'node:path';
import type { Test } from 'tap';
import type { DaemonConfig } from '../../../edge/src/daemon.js';
import type { Poller } from '../../../edge/src/poll/types.js';
import { openLedger } from '../../../edge/src/report/ledger.js';
import type { BatchPoster } from '../../../edge/src/report/poster.js';
import { openSqliteZoneStore } from '../../../edge/src/zones/store.js';
import { testDaemon } from './daemon.js';

export interface CollectorOptions {
  /** Where batches go; without one they are kept in the ledger only. The caller closes it. */
  poster?: BatchPoster;
  /** The daemon's wall clock (epoch ms); default Date.now. */
  clock?: () => number;
}

/**
 * A daemon over the zone file at `zonesPath`; `stop` stops it and closes its stores (also at teardown).
 *
 * @example
 * const evening = collectorOn(t, path, config, poller);
 * await evening.daemon.tick();
 * await evening.stop();
 * const morning = collectorOn(t, path, config, poller);
 */
export function collectorOn(t: Test, zonesPath: string, config: DaemonConfig, poller: Poller, options: CollectorOptions = {}) {
  const zones = openSqliteZoneStore(zonesPath);
  const ledger = openLedger(join(zonesPath, '..', `ledger-${Math.random().toString(36).slice(2)}.sqlite`));
  const { daemon } = testDaemon(config, poller, { zones, ledger }, options);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await daemon.stop();
    zones.close();
    ledger.close();
  };
  t.teardown(stop);
  return { daemon, ledger, stop };
}
