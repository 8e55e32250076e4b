/**
 * better-sqlite3's native addon inside the single executable: it travels as a SEA asset, is written once
 * to a private cache file (named by its SHA-256, so a stale or altered copy is never loaded) and loaded
 * with process.dlopen. Outside the executable, better-sqlite3 finds its addon in node_modules itself.
 *
 * The cache is $CACHE_DIRECTORY (the unit's CacheDirectory=, /var/cache/lintel-edge), else
 * `<tmpdir>/lintel-edge-<uid>` (TMPDIR, else /tmp): a command run from a shell unpacks there, and a /tmp
 * mounted noexec cannot load it.
 */
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as sea from 'node:sea';

export const SQLITE_ADDON_ASSET = 'better_sqlite3.node';

/** The addon's exports, as better-sqlite3's `nativeBinding` option accepts them. */
type Addon = object;

/**
 * Why the SQLite addon cannot be used. `LINTEL_ADDON_DIR_REFUSED`: the cache directory cannot be made or
 * is not this user's alone, which stays so until someone fixes it. `LINTEL_ADDON_UNLOADABLE`: the file
 * was written but the loader refused it (a noexec mount, most often; an addon built for another Node,
 * which the build now refuses to carry).
 */
export class NativeAddonError extends Error {
  constructor(
    message: string,
    readonly code: 'LINTEL_ADDON_DIR_REFUSED' | 'LINTEL_ADDON_UNLOADABLE',
  ) {
    super(message);
    this.name = 'NativeAddonError';
  }
}

/** How to unpack the addon elsewhere, for a message. */
const REDIRECT_HINT =
  'unpack it elsewhere: set CACHE_DIRECTORY=/var/cache/lintel-edge (as the unit does; a directory this user owns, mode 700), or TMPDIR to a directory on a filesystem that allows executables';

// The addon can be loaded into a process only once, so the loaded module is remembered for the process.
const loaded: { addon?: Addon } = {};

function privateCacheDir(): string {
  const fromSystemd = process.env.CACHE_DIRECTORY?.split(':')[0];
  const dir = fromSystemd || join(tmpdir(), `lintel-edge-${process.getuid?.() ?? 'user'}`);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new NativeAddonError(`cannot create ${dir} to unpack the SQLite addon into (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); ${REDIRECT_HINT}`, 'LINTEL_ADDON_DIR_REFUSED');
  }
  const stat = lstatSync(dir);
  if (!stat.isDirectory() || (process.getuid && stat.uid !== process.getuid()) || (stat.mode & 0o022) !== 0) {
    throw new NativeAddonError(`refusing to load the SQLite addon from ${dir}: it must be a directory owned by this user and writable by no one else`, 'LINTEL_ADDON_DIR_REFUSED');
  }
  return dir;
}

/**
 * What a loader refusal means, from the loader's own words (dlopen's, or Node's):
 * - an addon built for another Node: Node names both module versions (`NODE_MODULE_VERSION`); the
 *   executable was built from a stale better-sqlite3, and only a rebuild cures it;
 * - a file that may not be mapped or opened: a filesystem mounted noexec (/tmp often is) lets the file be
 *   written but not mapped ("failed to map segment from shared object"), and a permission refuses it;
 * - anything else (not a shared object, a missing symbol): the bytes are not an addon for this system.
 * Only the second points at the cache directory, since unpacking elsewhere changes nothing for the others.
 */
function whyUnloadable(loaderMessage: string, dir: string): string {
  if (/NODE_MODULE_VERSION/.test(loaderMessage)) {
    return 'The addon was built for another Node (a different NODE_MODULE_VERSION): rebuild the executable (npm rebuild better-sqlite3, then npm run build:edge)';
  }
  if (/failed to map segment|operation not permitted|permission denied/i.test(loaderMessage)) {
    return `${dir} may be on a filesystem mounted noexec, as /tmp often is; ${REDIRECT_HINT}`;
  }
  return 'The executable carries an addon this system cannot load: rebuild it (npm run build:edge) on a system like this one';
}

/**
 * Writes `bytes` into `dir` under their digest (unless an intact copy is there) and loads them. A loader
 * refusal names the file and what the loader's words mean (see whyUnloadable).
 *
 * @example
 * loadAddonFrom(Buffer.from(sea.getAsset(SQLITE_ADDON_ASSET)), '/var/cache/lintel-edge');
 */
export function loadAddonFrom(bytes: Buffer, dir: string): Addon {
  const digest = createHash('sha256').update(bytes).digest('hex');
  const file = join(dir, `better_sqlite3-${digest.slice(0, 16)}.node`);
  const intact = existsSync(file) && createHash('sha256').update(readFileSync(file)).digest('hex') === digest;
  if (!intact) {
    const partial = `${file}.${process.pid}.tmp`;
    writeFileSync(partial, bytes, { mode: 0o700 });
    chmodSync(partial, 0o700);
    renameSync(partial, file);
  }
  const module = { exports: {} as Addon };
  try {
    process.dlopen(module, file);
  } catch (err) {
    // Node's own message spans lines; a log line holds one.
    const loaderMessage = (err as Error).message.replace(/\s+/g, ' ').trim();
    throw new NativeAddonError(
      `cannot load the SQLite addon unpacked to ${file} (${loaderMessage}). ${whyUnloadable(loaderMessage, dir)}`,
      'LINTEL_ADDON_UNLOADABLE',
    );
  }
  return module.exports;
}

/**
 * The addon to pass as `nativeBinding` when running as the single executable, else undefined.
 */
export function nativeBindingForSea(): Addon | undefined {
  if (!sea.isSea()) return undefined;
  if (loaded.addon) return loaded.addon;
  loaded.addon = loadAddonFrom(Buffer.from(sea.getAsset(SQLITE_ADDON_ASSET)), privateCacheDir());
  return loaded.addon;
}
