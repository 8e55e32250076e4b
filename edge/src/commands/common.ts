/**
 * What the commands share: where they write, and loading the config with every check at once.
 */
import { homedir } from 'node:os';
import { loadConfig, type EdgeConfig } from '../config/load.js';
import { dialectInfoOf } from '../config/dialects.js';
import { checkAccessPoint, DialectError, loadDialects, type DialectCatalog } from '../poll/index.js';

/** Where a command writes; tests capture it. */
export interface CommandIo {
  out(text: string): void;
  err(text: string): void;
  /** Whether `out` is an interactive terminal (live redraws). */
  isTty?: boolean;
  /** The terminal's width, when `out` is one. */
  readonly columns?: number | undefined;
  /**
   * Aborted when `out` can no longer be written: its reader has gone (`lintel-edge simulate | head -3`
   * once head has its lines). A command that runs until interrupted ends its run, as on Ctrl-C.
   */
  readonly gone?: AbortSignal;
}

/**
 * The process's stdout and stderr. A write to a pipe whose reader has closed fails (EPIPE) with an
 * 'error' event that, unheard, ends the process with a stack trace and skips every cleanup (simulate's
 * temporary directory of keys stays behind). Here it is heard: that stream's later writes are dropped,
 * and a stdout gone aborts `gone`. The listeners stay for the life of the process: the EPIPE of a last
 * write is emitted after the command has returned.
 */
export function openProcessIo(): CommandIo {
  const gone = new AbortController();
  return {
    out: writerTo(process.stdout, () => gone.abort()),
    err: writerTo(process.stderr),
    isTty: process.stdout.isTTY === true,
    // Read at each redraw: the terminal may be resized while the table runs.
    get columns() {
      return process.stdout.columns;
    },
    gone: gone.signal,
  };
}

/** Writes to `stream` until it fails (any error leaves it destroyed), then drops what follows. */
function writerTo(stream: NodeJS.WriteStream, onGone?: () => void): (text: string) => void {
  let open = true;
  stream.on('error', () => {
    open = false;
    onGone?.();
  });
  return (text) => {
    if (open) stream.write(text);
  };
}

/** The shipped dialects, or undefined after printing every problem in them. */
export function loadShippedDialects(io: CommandIo): DialectCatalog | undefined {
  try {
    return loadDialects();
  } catch (err) {
    if (err instanceof DialectError) {
      io.err(`${err.message}\n`);
      return undefined;
    }
    throw err;
  }
}

/** The default state directory: systemd's StateDirectory, else /var/lib/lintel-edge. */
export function defaultStateDir(): string {
  return process.env.STATE_DIRECTORY?.split(':')[0] || '/var/lib/lintel-edge';
}

/** A config file read and checked: the config, or every problem found in it. */
export type CheckedConfig = { ok: true; config: EdgeConfig; warnings: string[] } | { ok: false; errors: string[] };

/**
 * Reads and checks the config (and every AP against its dialect), reporting every problem at once. The
 * collector's start and its reloads both go through here, so a reload accepts exactly what a start does.
 */
export function checkConfigFile(path: string, frozenPolls: number | undefined, dialects: DialectCatalog): CheckedConfig {
  const result = loadConfig(path.replace(/^~(?=\/)/, homedir()), {
    dialects: dialectInfoOf(dialects),
    defaultStateDir: defaultStateDir(),
    ...(frozenPolls !== undefined ? { frozenPolls } : {}),
  });
  if (!result.ok) return result;
  const problems: string[] = [];
  result.config.accessPoints.forEach((ap, i) => {
    for (const problem of checkAccessPoint(ap, dialects)) problems.push(`accessPoints[${i}] (${ap.name}): ${problem}`);
  });
  if (problems.length > 0) return { ok: false, errors: problems };
  return result;
}

/**
 * Loads and checks the config (and every AP against its dialect); prints every problem and returns
 * undefined when there is any.
 */
export function loadCheckedConfig(
  path: string,
  frozenPolls: number | undefined,
  io: CommandIo,
): { config: EdgeConfig; dialects: DialectCatalog; warnings: string[] } | undefined {
  const dialects = loadShippedDialects(io);
  if (!dialects) return undefined;
  const checked = checkConfigFile(path, frozenPolls, dialects);
  if (!checked.ok) {
    io.err(`lintel-edge: invalid configuration in ${path}:\n  ${checked.errors.join('\n  ')}\n`);
    return undefined;
  }
  return { config: checked.config, dialects, warnings: checked.warnings };
}
