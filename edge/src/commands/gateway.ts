/**
 * Wiring one collector from its parts: device key, zone store, ledger, poller, poster, metrics. Used by
 * `run` and `simulate`; what it opens, `close()` closes.
 */
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { EdgeDaemon, reportedApNames, type DaemonConfig, type Reconfigured, type TickReport } from '../daemon.js';
import { createEdgeMetrics, type EdgeMetrics } from '../metrics.js';
import type { Poller } from '../poll/types.js';
import { openLedger, type Ledger } from '../report/ledger.js';
import { createBatchPoster, type BatchPoster, type PosterOptions } from '../report/poster.js';
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

/** Where batches go: the poster's settings as the config gives them. */
type IngestSettings = Omit<PosterOptions, 'withAnswer'>;

export interface GatewayOptions {
  config: DaemonConfig;
  stateDir: string;
  poller: Poller;
  ingest?: IngestSettings;
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
  /**
   * Applies a reloaded configuration between two ticks (see {@link EdgeDaemon.reconfigure}); a changed
   * ingest gets a new poster, and the old one is closed once no tick can use it.
   */
  reconfigure(settings: { config: DaemonConfig; ingest?: IngestSettings; ledgerRetentionMs?: number }): Promise<Reconfigured>;
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
  const metrics = createEdgeMetrics({ aps: reportedApNames(options.config), zones: options.config.zones.map((z) => z.id) }, { defaults: options.processMetrics ?? true });
  const { interrupted } = ledger;
  if (interrupted.count > 0) {
    metrics.batches.inc({ delivery: 'interrupted' }, interrupted.count);
    logger.warn({ interrupted: interrupted.count, firstSeq: interrupted.firstSeq, lastSeq: interrupted.lastSeq }, 'ledger entries whose post outcome was never recorded (the last run stopped mid-post) marked interrupted; not sent again');
  }
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
  let ingest = options.ingest;
  return {
    daemon,
    metrics,
    ledger: openLedgerRef,
    zones,
    paths,
    async reconfigure(settings) {
      const sameIngest = isDeepStrictEqual(settings.ingest, ingest);
      const next = sameIngest ? poster : settings.ingest ? createBatchPoster(settings.ingest) : undefined;
      const done = await daemon.reconfigure({
        config: settings.config,
        ...(next ? { poster: next } : {}),
        ...(settings.ledgerRetentionMs !== undefined ? { ledgerRetentionMs: settings.ledgerRetentionMs } : {}),
      });
      if (sameIngest) return done;
      // Whichever poster the daemon no longer (or never) uses is closed; the other one is the gateway's to close.
      const unused = done.applied ? poster : next;
      if (done.applied) {
        poster = next;
        ingest = settings.ingest;
      }
      // an idle agent closing: nothing to report, and the reload has happened either way
      await unused?.close().catch(() => undefined);
      return done;
    },
    async close() {
      await daemon.stop();
      await poster?.close();
      zones.close();
      openLedgerRef.close();
    },
  };
}
