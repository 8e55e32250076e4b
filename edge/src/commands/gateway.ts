/**
 * Wiring one collector from its parts: device key, zone store, ledger, poller, poster, metrics. Used by
 * `run` and `simulate`; what it opens, `close()` closes.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import { EdgeDaemon, type DaemonConfig, type TickReport } from '../daemon.js';
import { createEdgeMetrics, type EdgeMetrics } from '../metrics.js';
import type { Poller } from '../poll/types.js';
import { openLedger, type Ledger } from '../report/ledger.js';
import { createBatchPoster, type BatchPoster } from '../report/poster.js';
import { createDeviceHasher, keyFingerprint, loadOrCreateDeviceKey } from '../zones/device-key.js';
import { openSqliteZoneStore, type ZoneStore } from '../zones/store.js';

/** The files a gateway keeps in its state directory. */
export function statePaths(stateDir: string) {
  return {
    deviceKey: join(stateDir, 'device.key'),
    zones: join(stateDir, 'zones.sqlite'),
    ledger: join(stateDir, 'ledger.sqlite'),
  };
}

export interface GatewayOptions {
  config: DaemonConfig;
  stateDir: string;
  poller: Poller;
  ingest?: { url: string; secret: string; keyId?: string; timeoutMs: number };
  logger: Logger;
  /** Node's default process metrics in the registry. Default true. */
  processMetrics?: boolean;
  onTick?: (report: TickReport) => void;
  ledgerRetentionMs?: number;
}

export interface Gateway {
  daemon: EdgeDaemon;
  metrics: EdgeMetrics;
  ledger: Ledger;
  zones: ZoneStore;
  paths: ReturnType<typeof statePaths>;
  close(): Promise<void>;
}

/**
 * Opens the state (creating the device key on first start), and builds the daemon over it.
 *
 * @example
 * const gateway = openGateway({ config, stateDir, poller, ingest, logger });
 * await gateway.daemon.start();
 */
export function openGateway(options: GatewayOptions): Gateway {
  const paths = statePaths(options.stateDir);
  const { logger } = options;
  const key = loadOrCreateDeviceKey(paths.deviceKey, (warning) => logger.warn(warning));
  const zones = openSqliteZoneStore(paths.zones);
  let ledger: Ledger | undefined;
  let poster: BatchPoster | undefined;
  try {
    if (zones.bindKey(keyFingerprint(key)) === 'cleared') {
      logger.warn('the device key changed: stored devices were forgotten (their ids cannot recur)');
    }
    ledger = openLedger(paths.ledger);
    poster = options.ingest ? createBatchPoster(options.ingest) : undefined;
  } catch (err) {
    zones.close();
    ledger?.close();
    throw err;
  }
  const names = new Set<string>();
  for (const ap of options.config.accessPoints) {
    if (ap.apZones) for (const identity of Object.keys(ap.apZones)) names.add(options.config.reportNames[identity] ?? identity);
    else names.add(options.config.reportNames[ap.name] ?? ap.name);
  }
  const metrics = createEdgeMetrics({ aps: [...names], zones: options.config.zones.map((z) => z.id) }, { defaults: options.processMetrics ?? true });
  const daemon = new EdgeDaemon({
    config: options.config,
    poller: options.poller,
    hasher: createDeviceHasher(key),
    zones,
    ledger,
    ...(poster ? { poster } : {}),
    metrics,
    logger,
    ...(options.onTick ? { onTick: options.onTick } : {}),
    ...(options.ledgerRetentionMs !== undefined ? { ledgerRetentionMs: options.ledgerRetentionMs } : {}),
  });
  const openLedgerRef = ledger;
  return {
    daemon,
    metrics,
    ledger: openLedgerRef,
    zones,
    paths,
    async close() {
      await daemon.stop();
      await poster?.close();
      zones.close();
      openLedgerRef.close();
    },
  };
}
