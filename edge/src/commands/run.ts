/**
 * `lintel-edge run --config <yaml>`: the collector, until SIGTERM or SIGINT. SIGHUP reloads the config.
 *
 * Exit codes: 0 after a clean stop; 1 when it cannot start or stop (a port in use, a state file another
 * process kept locked, a stop that hung), which a restart may cure; 2 when the config is invalid or the
 * state cannot be opened (a ledger another user owns, a ledger that is not a database), which a restart
 * never cures: the unit does not restart on it (RestartPreventExitStatus=2), so the problem is fixed
 * first instead of retried every few seconds.
 */
import type { Logger } from 'pino';
import { createLogger } from '../../../shared/logger.js';
import { describeError } from '../../../shared/describe-error.js';
import { serveMetrics } from '../metrics.js';
import { createPoller } from '../poll/index.js';
import { runtimeFacts } from '../runtime.js';
import { VERSION } from '../version.js';
import type { EdgeConfig } from '../config/load.js';
import type { DialectCatalog } from '../poll/index.js';
import { openGateway } from './gateway.js';
import { loadCheckedConfig, type CommandIo } from './common.js';
import { createReloader, type Reloader } from './reload.js';
import { endHangupHold } from '../hangup-hold.js';
import { sqliteCodeOf } from '../storage/sqlite.js';

export interface RunOptions {
  config: string;
  frozenPolls?: number;
}

/** How long closing the state and the listeners may take, on top of any post in flight. */
const STOP_GRACE_MS = 10_000;

/**
 * When a stop counts as hung. The tick in flight finishes its batch post, which the ingest timeout
 * bounds (up to pollIntervalS), so that post's time is allowed on top of the grace: a silent ingest
 * must not turn a clean stop into an exit 1 with the post's delivery unrecorded.
 */
function stopDeadlineMs(ingestTimeoutMs: number | undefined): number {
  return STOP_GRACE_MS + (ingestTimeoutMs ?? 0);
}

/** SIGHUP for the life of the collector, as each phase wants it. */
interface HangupListener {
  /** From now on, a SIGHUP reloads through `reloader`; one received while starting is served now. */
  serve(reloader: Reloader): void;
  /** From now on, a SIGHUP is ignored (logged). */
  stopping(): void;
  close(): void;
}

/**
 * Listens for SIGHUP from the start, so that one arriving at any time never ends the process (Node's
 * default). While starting, it is held: the file may already differ from what the start read.
 */
function listenForHangup(logger: Logger): HangupListener {
  let reloader: Reloader | undefined;
  let held = false;
  let stopping = false;
  const reload = (r: Reloader) => {
    const outcome = r.request();
    if (outcome === 'started') logger.info({ signal: 'SIGHUP' }, 'reloading the configuration');
    else if (outcome === 'queued') logger.info({ signal: 'SIGHUP' }, 'a reload is in progress; one more follows it');
  };
  const onHangup = () => {
    if (stopping) logger.info({ signal: 'SIGHUP' }, 'stopping: the configuration is not reloaded');
    else if (reloader) reload(reloader);
    else held = true;
  };
  process.on('SIGHUP', onHangup);
  // Installed before the entry point's hold ends, so no SIGHUP falls between the two.
  if (endHangupHold()) held = true;
  return {
    serve(r) {
      reloader = r;
      if (held) reload(r);
    },
    stopping() {
      stopping = true;
    },
    close() {
      process.off('SIGHUP', onHangup);
    },
  };
}

/**
 * Whether opening the state failed only because another process held a file's lock past the busy
 * timeout (a long `ledger export`, say): that passes, so it is exit 1, which the unit restarts.
 */
function isLockedOut(err: unknown): boolean {
  return /^SQLITE_(BUSY|LOCKED)/.test(sqliteCodeOf(err) ?? '');
}

/** Runs until a signal; resolves with the exit code. */
export async function runCollector(options: RunOptions, io: CommandIo): Promise<number> {
  const loaded = loadCheckedConfig(options.config, options.frozenPolls, io);
  if (!loaded) return 2;
  const logger = createLogger('lintel-edge', { level: loaded.config.logLevel });
  const hangups = listenForHangup(logger);
  try {
    return await collect(options, loaded, logger, hangups, io);
  } finally {
    hangups.close();
  }
}

/** The collector from start to stop. */
async function collect(
  options: RunOptions,
  { config, dialects, warnings }: { config: EdgeConfig; dialects: DialectCatalog; warnings: string[] },
  logger: Logger,
  hangups: HangupListener,
  io: CommandIo,
): Promise<number> {
  const runtime = runtimeFacts();
  logger.info(
    { version: VERSION, heapLimitMb: Math.round(runtime.heapLimitMb), nodeOptions: runtime.nodeOptions ?? null, singleExecutable: runtime.singleExecutable },
    'starting',
  );
  for (const warning of warnings) logger.warn(warning);

  const poller = createPoller({ dialects });
  let gateway;
  try {
    gateway = openGateway({ config, stateDir: config.stateDir, poller, ...(config.ingest ? { ingest: config.ingest } : {}), logger, ledgerRetentionMs: config.ledgerRetentionMs });
  } catch (err) {
    await poller.close();
    io.err(`lintel-edge: cannot open the state in ${config.stateDir}: ${(err as Error).message}\n`);
    return isLockedOut(err) ? 1 : 2;
  }
  let metricsServer: { port: number; close(): Promise<void> } | undefined;
  try {
    if (config.metrics) {
      metricsServer = await serveMetrics(gateway.metrics.registry, config.metrics.host, config.metrics.port);
      logger.info({ host: config.metrics.host, port: metricsServer.port }, 'metrics listening');
    }
    if (!config.ingest) logger.warn('no ingest configured: batches are kept in the ledger only');
    await gateway.daemon.start();
  } catch (err) {
    logger.error({ error: describeError(err) }, 'cannot start');
    await metricsServer?.close();
    await gateway.close();
    await poller.close();
    return 1;
  }

  const reloader = createReloader({ path: options.config, frozenPolls: options.frozenPolls, dialects, initial: config, gateway, logger });
  hangups.serve(reloader);

  const signal = await new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  hangups.stopping();
  logger.info({ signal }, 'stopping');
  const deadline = setTimeout(() => {
    logger.error('stop took too long; exiting');
    process.exit(1);
  }, stopDeadlineMs(reloader.current().ingest?.timeoutMs));
  deadline.unref();
  // Closing the poller ends a poll in flight at once, so stopping never waits out a timeout; the
  // daemon, told first, drops that cut-short poll instead of counting every AP as silent. A reload
  // waiting for that tick then finds the collector stopping and applies nothing.
  const stopping = gateway.daemon.stop();
  const reloads = reloader.close();
  await poller.close();
  await stopping;
  await reloads;
  await metricsServer?.close();
  await gateway.close();
  clearTimeout(deadline);
  logger.info('stopped');
  return 0;
}
