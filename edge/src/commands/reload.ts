/**
 * Reloading the collector's configuration (SIGHUP, `systemctl reload lintel-edge`): the file is read and
 * checked as at start; an invalid one changes nothing, a valid one is applied between two ticks, except
 * the settings only a restart can change, which keep their value and are named in a warning.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { describeError } from '../../../shared/describe-error.js';
import type { EdgeConfig } from '../config/load.js';
import type { AccessPoint, DialectCatalog } from '../poll/index.js';
import type { Gateway } from './gateway.js';
import { checkConfigFile } from './common.js';

/** How each setting reloads, named by the key written in the file. Access points are compared one by one. */
const SETTINGS: Record<Exclude<keyof EdgeConfig, 'source' | 'accessPoints' | 'reportNames'>, { key: string; live: boolean }> = {
  buildingId: { key: 'buildingId', live: true },
  pollIntervalMs: { key: 'pollIntervalS', live: true },
  requestTimeoutMs: { key: 'requestTimeoutS', live: true },
  zones: { key: 'zones', live: true },
  tracker: { key: 'tracker', live: true },
  ingest: { key: 'ingest', live: true },
  logLevel: { key: 'logLevel', live: true },
  ledgerRetentionMs: { key: 'ledgerRetentionDays', live: true },
  // the collector does not drive sensors; `lintel-edge action` reads them from the file each time
  sensors: { key: 'sensors', live: true },
  // the state is open and the listener bound for the life of the process
  stateDir: { key: 'stateDir', live: false },
  metrics: { key: 'metrics.listen', live: false },
};

/** What differs between the running configuration and the file, by AP name and by file key. */
export interface ConfigChange {
  apsAdded: string[];
  apsRemoved: string[];
  /** Host, transport, dialect, zone, credentials (the files are read again), or the APs behind a controller. */
  apsChanged: string[];
  /** Settings applied live. */
  changed: string[];
  /** Settings that keep their current value until the collector restarts. */
  restartNeeded: string[];
}

/** An AP as compared across a reload: its poll target and zones, and the names its results report under. */
function comparable(ap: AccessPoint, config: EdgeConfig): unknown {
  const identities = ap.apZones ? Object.keys(ap.apZones) : [ap.name];
  return { ap, names: identities.map((identity) => config.reportNames[identity] ?? identity) };
}

/**
 * What a reload from `current` to `next` changes.
 *
 * @example
 * describeChange(running, reread); // { apsAdded: ['cafe-2'], apsRemoved: [], apsChanged: [], changed: ['pollIntervalS'], restartNeeded: [] }
 */
export function describeChange(current: EdgeConfig, next: EdgeConfig): ConfigChange {
  const before = new Map(current.accessPoints.map((ap) => [ap.name, ap]));
  const after = new Map(next.accessPoints.map((ap) => [ap.name, ap]));
  const change: ConfigChange = { apsAdded: [], apsRemoved: [], apsChanged: [], changed: [], restartNeeded: [] };
  for (const [name, ap] of after) {
    const old = before.get(name);
    if (!old) change.apsAdded.push(name);
    else if (!isDeepStrictEqual(comparable(old, current), comparable(ap, next))) change.apsChanged.push(name);
  }
  for (const name of before.keys()) if (!after.has(name)) change.apsRemoved.push(name);
  for (const [field, { key, live }] of Object.entries(SETTINGS) as Array<[keyof typeof SETTINGS, { key: string; live: boolean }]>) {
    if (isDeepStrictEqual(current[field], next[field])) continue;
    (live ? change.changed : change.restartNeeded).push(key);
  }
  return change;
}

/** `next`, with the settings only a restart can change kept at their running value. */
function keepRestartOnly(current: EdgeConfig, next: EdgeConfig): EdgeConfig {
  const kept: EdgeConfig = { ...next, stateDir: current.stateDir };
  delete kept.metrics;
  if (current.metrics) kept.metrics = current.metrics;
  return kept;
}

/**
 * Runs one reload at a time. A request during a reload queues one more (however many arrive, they are
 * served by that one, which reads the file as it is by then); after `close()` requests are ignored.
 */
export class ReloadQueue {
  private running: Promise<void> | undefined;
  private again = false;
  private closed = false;

  /** `reload` must not reject: it reports its own failures. */
  constructor(private readonly reload: () => Promise<void>) {}

  request(): 'started' | 'queued' | 'ignored' {
    if (this.closed) return 'ignored';
    if (this.running) {
      this.again = true;
      return 'queued';
    }
    this.running = this.drain();
    return 'started';
  }

  /** Ignores later requests, drops a queued one, and waits for the reload in progress. */
  async close(): Promise<void> {
    this.closed = true;
    this.again = false;
    await this.running;
  }

  private async drain(): Promise<void> {
    try {
      do {
        this.again = false;
        await this.reload();
      } while (this.again && !this.closed);
    } finally {
      this.running = undefined;
    }
  }
}

export interface ReloaderDeps {
  /** The config file the collector was started with, as given on the command line. */
  path: string;
  frozenPolls: number | undefined;
  /** The poller's dialects: the APs are checked against the catalog that will poll them. */
  dialects: DialectCatalog;
  /** The configuration the gateway was opened with. */
  initial: EdgeConfig;
  gateway: Gateway;
  logger: Logger;
}

export interface Reloader {
  /** Asks for a reload (see {@link ReloadQueue.request}). */
  request(): 'started' | 'queued' | 'ignored';
  /** The configuration running now. */
  current(): EdgeConfig;
  /** No reload starts after this; resolves once the one in progress is done. */
  close(): Promise<void>;
}

/**
 * Reloads the collector's configuration on request.
 *
 * @example
 * const reloader = createReloader({ path, frozenPolls, dialects, initial: config, gateway, logger });
 * process.on('SIGHUP', () => reloader.request());
 */
export function createReloader(deps: ReloaderDeps): Reloader {
  const { gateway, logger } = deps;
  let current = deps.initial;

  async function reloadOnce(): Promise<void> {
    try {
      const checked = checkConfigFile(deps.path, deps.frozenPolls, deps.dialects);
      if (!checked.ok) {
        gateway.metrics.reloads.inc({ result: 'rejected' });
        logger.error({ config: deps.path, problems: checked.errors }, 'configuration not reloaded: the file is invalid; still running on the previous configuration');
        return;
      }
      for (const warning of checked.warnings) logger.warn(warning);
      const change = describeChange(current, checked.config);
      for (const key of change.restartNeeded) {
        logger.warn({ key }, `${key} changed: a restart is needed to apply it; the rest of the configuration is reloaded`);
      }
      const next = keepRestartOnly(current, checked.config);
      const done = await gateway.reconfigure({
        config: next,
        ...(next.ingest ? { ingest: next.ingest } : {}),
        ledgerRetentionMs: next.ledgerRetentionMs,
      });
      if (!done.applied) {
        logger.info('configuration not reloaded: the collector is stopping');
        return;
      }
      const hadIngest = current.ingest !== undefined;
      current = next;
      logger.level = next.logLevel;
      if (hadIngest && !next.ingest) logger.warn('no ingest configured: batches are kept in the ledger only');
      gateway.metrics.reloads.inc({ result: 'applied' });
      logger.info({ ...change, rezoned: done.rezoned }, 'reloaded');
    } catch (err) {
      gateway.metrics.reloads.inc({ result: 'rejected' });
      logger.error({ error: describeError(err) }, 'configuration not reloaded; still running on the previous configuration');
    }
  }

  const queue = new ReloadQueue(reloadOnce);
  return {
    request: () => queue.request(),
    current: () => current,
    close: () => queue.close(),
  };
}
