/**
 * `lintel-edge run --config <yaml>`: the collector, until SIGTERM or SIGINT. SIGHUP reloads the config.
 *
 * Exit codes: 0 after a clean stop; 1 when it cannot start or stop for a reason a restart may cure (a
 * metrics port in use, a state file another process kept locked, a full disk, an I/O error, a stop that
 * hung); 2 when the config is invalid or the state cannot be opened as it is (a ledger another user owns,
 * a ledger that is not a database, a device key that is not one, a stateDir the unit may not write or
 * empties at every stop), or
 * metrics.listen names a port the service user may not bind (EACCES: below 1024), which
 * a restart never cures: the unit does not restart on it (RestartPreventExitStatus=2), so the problem is
 * fixed first instead of retried every few seconds. {@link startFailureExitCode} tells the two apart.
 */
import { accessSync, constants, existsSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative } from 'node:path';
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
import { isCacheDirectoryRefusal } from './cache-directory.js';
import { loadCheckedConfig, type CommandIo } from './common.js';
import { createReloader, type Reloader } from './reload.js';
import { endHangupHold } from '../hangup-hold.js';
import { NativeAddonError, nativeBindingForSea } from '../storage/native-addon.js';
import { isUnreadableDatabase, sqliteCodeOf } from '../storage/sqlite.js';
import { DeviceKeyError } from '../zones/device-key.js';

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
 * Errnos of a state that stays broken until someone fixes it: a permission, a read-only mount, a file
 * where a directory belongs (a device.key that is a directory: EISDIR) or the reverse, a symlink loop.
 * Any other (ENOSPC, EIO, EDQUOT, EMFILE, …) may clear by itself.
 */
const LASTING_ERRNOS = new Set(['EACCES', 'EPERM', 'EROFS', 'EISDIR', 'ENOTDIR', 'ELOOP']);

/** The errno behind `err`, from its `code`. */
function errnoOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^E[A-Z0-9]+$/.test(code)) return code;
  return undefined;
}

/**
 * The exit code of a start that could not open the state or bind the metrics listener (an errno: EACCES
 * is 2, EADDRINUSE 1): 2 when only a fix cures it (the file is
 * read-only to this user, not a database or damaged, in a directory that refuses this user the file or
 * its -wal and -shm, an invalid device key, a cache directory refused as another user's), else 1, which
 * the unit restarts: a lock held past the busy timeout (a long `ledger export`), a full disk (SQLITE_FULL,
 * ENOSPC, a file SQLite could not create with no inodes left), an I/O error (SQLITE_IOERR_*, EIO).
 *
 * @example
 * startFailureExitCode(new StorageError('cannot open …: file is not a database', 'SQLITE_NOTADB')); // 2
 * startFailureExitCode(new StorageError('cannot prepare …: database or disk is full', 'SQLITE_FULL')); // 1
 */
export function startFailureExitCode(err: unknown): 1 | 2 {
  const sqlite = sqliteCodeOf(err);
  if (sqlite !== undefined) {
    if (isUnreadableDatabase(err) || sqlite.startsWith('SQLITE_READONLY')) return 2;
    // SQLite answers CANTOPEN alike for every cause; openDatabase names a file or a directory that
    // refuses this user in the message, and only then (a full disk or no inodes left is exit 1).
    if (sqlite === 'SQLITE_CANTOPEN' && /: (permission denied|cannot create it|cannot create its -wal or -shm): /.test((err as Error).message)) return 2;
    return 1;
  }
  if (isCacheDirectoryRefusal(err)) return 2;
  if (err instanceof NativeAddonError) return 1;
  const errno = errnoOf(err);
  if (errno !== undefined) return LASTING_ERRNOS.has(errno) ? 2 : 1;
  // A device key error with no errno is a key file of the wrong length, or a link to no file.
  return err instanceof DeviceKeyError ? 2 : 1;
}

/** `host:port` as metrics.listen spells it, an IPv6 host in brackets. */
function listenAddress({ host, port }: { host: string; port: number }): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** What to do about each errno of a metrics listener that cannot bind. */
const LISTEN_HINTS: Record<string, string> = {
  EACCES: 'a port below 1024 needs a privilege the service user does not have (the unit grants no capability); choose a port of 1024 or above',
  EADDRINUSE: 'another process listens there; the unit tries again, and if it stays so, stop that process or choose another port',
  EADDRNOTAVAIL: 'no interface of this host has that address (yet); the unit tries again, and if it stays so, listen on an address of this host',
};

/**
 * A metrics listener that cannot bind, named as the config names it, with its errno and what to do.
 * Its exit code is startFailureExitCode's: EACCES (a privileged port) stays so until the config changes
 * (exit 2); a port in use or an address not yet up may clear (exit 1).
 */
function metricsListenProblem(listen: string, err: unknown): string {
  const errno = errnoOf(err);
  const hint = errno === undefined ? undefined : LISTEN_HINTS[errno];
  return `metrics.listen ${listen} cannot be bound (${errno ?? describeError(err)})${hint ? `: ${hint}` : ''}`;
}

function isWithin(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (rel !== '..' && !rel.startsWith('../') && !isAbsolute(rel));
}

/** The errno that refuses writing `path`, or its nearest existing ancestor while it does not exist. */
function writeRefusal(path: string): string | undefined {
  let probe = path;
  while (!existsSync(probe) && dirname(probe) !== probe) probe = dirname(probe);
  try {
    accessSync(probe, constants.W_OK);
    return undefined;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? 'error';
  }
}

/**
 * Under the unit (`stateDirectory` is its $STATE_DIRECTORY), a stateDir outside that directory is
 * read-only, as ProtectSystem=strict makes every path the unit does not name in ReadWritePaths=. The
 * first write would fail with a bare EROFS; this says at start what to change. Answers the problem, or
 * undefined (outside the unit, inside its state directory, or writable through a drop-in).
 */
function sandboxedStateDirProblem(stateDir: string, stateDirectory: string | undefined, configPath: string): string | undefined {
  const unitDirs = (stateDirectory ?? '').split(':').filter((dir) => dir !== '');
  if (unitDirs.length === 0 || unitDirs.some((dir) => isWithin(stateDir, dir))) return undefined;
  if (writeRefusal(stateDir) !== 'EROFS') return undefined;
  return (
    `stateDir ${stateDir} (set in ${configPath}) is outside the unit's state directory ${unitDirs[0]} ($STATE_DIRECTORY), ` +
    `and the unit's ProtectSystem=strict makes it read-only (EROFS). Remove stateDir from the config to keep the state in ${unitDirs[0]}, ` +
    `or keep ${stateDir}: create it, owned by the service user with mode 700, and let the unit write there with a drop-in ` +
    `(systemctl edit lintel-edge): [Service] ReadWritePaths=${stateDir}`
  );
}

/** The directories the unit's PrivateTmp=yes replaces with its own, emptied at every stop. */
const PRIVATE_TMP_DIRS = ['/tmp', '/var/tmp'];

/** `path` with the symbolic links of its longest existing part resolved (the rest may not exist yet). */
function resolvedPath(path: string): string {
  let existing = path;
  const rest: string[] = [];
  while (dirname(existing) !== existing) {
    try {
      return join(realpathSync(existing), ...rest);
    } catch {
      rest.unshift(basename(existing));
      existing = dirname(existing);
    }
  }
  return path;
}

/**
 * Under the unit, a stateDir in /tmp or /var/tmp (as written, or once its links are resolved) is
 * writable, but the unit's PrivateTmp=yes makes it a directory of the unit's own that systemd empties at
 * every stop: the device key (so every device's id), the zones and the audit ledger would be lost each
 * time, and the ledger is never to be set aside. Answers the problem, or undefined (outside the unit, or
 * inside its state directory).
 */
function privateTmpStateDirProblem(stateDir: string, stateDirectory: string | undefined, configPath: string): string | undefined {
  const unitDirs = (stateDirectory ?? '').split(':').filter((dir) => dir !== '');
  if (unitDirs.length === 0 || unitDirs.some((dir) => isWithin(stateDir, dir))) return undefined;
  const resolved = resolvedPath(stateDir);
  const tmpDirs = PRIVATE_TMP_DIRS.flatMap((dir) => [dir, resolvedPath(dir)]);
  const written = tmpDirs.find((dir) => isWithin(stateDir, dir));
  const linked = tmpDirs.find((dir) => isWithin(resolved, dir));
  const where = written !== undefined ? `is in ${written}` : linked !== undefined ? `leads into ${linked} (${resolved}, through a symbolic link)` : undefined;
  if (where === undefined) return undefined;
  return (
    `stateDir ${stateDir} (set in ${configPath}) ${where}, which the unit's PrivateTmp=yes makes its own and empties at every stop: ` +
    `the device key, the zones and the audit ledger would be lost each time. Remove stateDir from the config to keep the state in ${unitDirs[0]} ($STATE_DIRECTORY), ` +
    `or choose a directory outside /tmp and /var/tmp: create it, owned by the service user with mode 700, and let the unit write there with a drop-in ` +
    `(systemctl edit lintel-edge): [Service] ReadWritePaths=<that directory>`
  );
}

/** Runs until a signal; resolves with the exit code. */
export async function runCollector(options: RunOptions, io: CommandIo): Promise<number> {
  const loaded = loadCheckedConfig(options.config, options.frozenPolls, io);
  if (!loaded) return 2;
  const sandboxed =
    privateTmpStateDirProblem(loaded.config.stateDir, process.env.STATE_DIRECTORY, options.config) ??
    sandboxedStateDirProblem(loaded.config.stateDir, process.env.STATE_DIRECTORY, options.config);
  if (sandboxed) {
    io.err(`lintel-edge: ${sandboxed}\n`);
    return 2;
  }
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
    // Loaded first, so that a refusal reaches the exit code as itself rather than as a file that cannot be opened.
    nativeBindingForSea();
    gateway = openGateway({ config, stateDir: config.stateDir, poller, ...(config.ingest ? { ingest: config.ingest } : {}), logger, ledgerRetentionMs: config.ledgerRetentionMs });
  } catch (err) {
    await poller.close();
    io.err(`lintel-edge: cannot open the state in ${config.stateDir}: ${(err as Error).message}\n`);
    return startFailureExitCode(err);
  }
  let metricsServer: { port: number; close(): Promise<void> } | undefined;
  if (config.metrics) {
    try {
      metricsServer = await serveMetrics(gateway.metrics.registry, config.metrics.host, config.metrics.port);
    } catch (err) {
      const listen = listenAddress(config.metrics);
      logger.error({ listen, error: describeError(err) }, `cannot start: ${metricsListenProblem(listen, err)}`);
      await gateway.close();
      await poller.close();
      return startFailureExitCode(err);
    }
    logger.info({ host: config.metrics.host, port: metricsServer.port }, 'metrics listening');
  }
  try {
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

  // The listeners stay until the stop is done: a `once` listener gone, a second SIGTERM or Ctrl-C (or
  // tsx relaying the one npm forwarded) took the signal's default action and killed the collector while
  // it waited for a batch post, whose outcome the ledger then never got.
  let signalled: (name: string) => void = () => undefined;
  const stopAsked = new Promise<string>((resolve) => (signalled = resolve));
  let signal: string | undefined;
  const onSignal = (name: string): void => {
    if (signal === undefined) signalled(name);
    else logger.info({ signal: name }, 'already stopping; the stop continues');
    signal ??= name;
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  await stopAsked;
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
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  logger.info('stopped');
  return 0;
}
