/**
 * better-sqlite3's native addon inside the single executable: it travels as a SEA asset, is written once
 * to a private cache file (named by its SHA-256, so a stale or altered copy is never loaded) and loaded
 * with process.dlopen. Outside the executable, better-sqlite3 finds its addon in node_modules itself.
 */
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as sea from 'node:sea';

export const SQLITE_ADDON_ASSET = 'better_sqlite3.node';

/** The addon's exports, as better-sqlite3's `nativeBinding` option accepts them. */
type Addon = object;

// The addon can be loaded into a process only once, so the loaded module is remembered for the process.
const loaded: { addon?: Addon } = {};

function privateCacheDir(): string {
  const fromSystemd = process.env.CACHE_DIRECTORY?.split(':')[0];
  const dir = fromSystemd || join(tmpdir(), `lintel-edge-${process.getuid?.() ?? 'user'}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = lstatSync(dir);
  if (!stat.isDirectory() || (process.getuid && stat.uid !== process.getuid()) || (stat.mode & 0o022) !== 0) {
    throw new Error(`refusing to load the SQLite addon from ${dir}: it must be a directory owned by this user and writable by no one else`);
  }
  return dir;
}

/**
 * The addon to pass as `nativeBinding` when running as the single executable, else undefined.
 */
export function nativeBindingForSea(): Addon | undefined {
  if (!sea.isSea()) return undefined;
  if (loaded.addon) return loaded.addon;
  const bytes = Buffer.from(sea.getAsset(SQLITE_ADDON_ASSET));
  const digest = createHash('sha256').update(bytes).digest('hex');
  const file = join(privateCacheDir(), `better_sqlite3-${digest.slice(0, 16)}.node`);
  const intact = existsSync(file) && createHash('sha256').update(readFileSync(file)).digest('hex') === digest;
  if (!intact) {
    const partial = `${file}.${process.pid}.tmp`;
    writeFileSync(partial, bytes, { mode: 0o700 });
    chmodSync(partial, 0o700);
    renameSync(partial, file);
  }
  const module = { exports: {} as Addon };
  process.dlopen(module, file);
  loaded.addon = module.exports;
  return module.exports;
}
