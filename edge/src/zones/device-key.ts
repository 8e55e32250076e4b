/**
 * Device identity at rest: a station's MAC is replaced, as soon as it is read, by the HMAC-SHA256 of the
 * MAC under a 32-byte key that is generated on this gateway and kept in a 0600 file. Without the key, a
 * stored id cannot be tied back to a MAC (not even by hashing every possible MAC).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { chmodSync, closeSync, fstatSync, fsyncSync, linkSync, lstatSync, mkdirSync, openSync, readFileSync, readlinkSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

export const DEVICE_KEY_BYTES = 32;

/** A key file problem, with a message that says what to do. Never carries key material. */
export class DeviceKeyError extends Error {
  /** The errno behind it (`EACCES`, `ENOSPC`, …); undefined for a key file of the wrong length. */
  readonly code: string | undefined;
  constructor(message: string, code?: string) {
    super(message);
    this.name = 'DeviceKeyError';
    this.code = code;
  }
}

/**
 * Reads the device key, creating it (32 random bytes, mode 0600) on first start. A key file readable by
 * group or others is tightened to 0600 and reported through `onWarning`.
 *
 * The key is written whole to a file of its own, synced, then linked to `path` (which fails if another
 * start created it first) and the directory synced: a power cut at any point leaves either no key
 * file or the complete one, never an empty file that would stop every later start.
 *
 * A symbolic link at `path` is followed; one to nothing is refused (a DeviceKeyError without an errno,
 * which stops the start for good), not replaced by a new key.
 *
 * @example
 * const key = loadOrCreateDeviceKey('/var/lib/lintel-edge/device.key');
 */
export function loadOrCreateDeviceKey(path: string, onWarning: (message: string) => void = () => {}): Buffer {
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new DeviceKeyError(`cannot create the directory of the device key file ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, (err as NodeJS.ErrnoException).code);
  }
  let created = false;
  if (!exists(path)) {
    try {
      created = createWhole(path, randomBytes(DEVICE_KEY_BYTES));
    } catch (err) {
      throw new DeviceKeyError(`cannot create the device key file ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, (err as NodeJS.ErrnoException).code);
    }
  }
  let key: Buffer;
  try {
    const fd = openSync(path, 'r');
    try {
      const mode = fstatSync(fd).mode & 0o777;
      if (!created && (mode & 0o077) !== 0) {
        chmodSync(path, 0o600);
        onWarning(`device key file ${path} was mode ${mode.toString(8)}; tightened to 600`);
      }
    } finally {
      closeSync(fd);
    }
    key = readFileSync(path);
  } catch (err) {
    const target = (err as NodeJS.ErrnoException).code === 'ENOENT' ? danglingLinkTarget(path) : undefined;
    // No errno: a link to nothing stays so until someone restores the key or removes the link (exit 2).
    if (target !== undefined) {
      throw new DeviceKeyError(
        `device key file ${path} is a symbolic link to ${target}, which does not exist; put the key back there, or remove the link to generate a new key (tracked devices will be forgotten)`,
      );
    }
    throw new DeviceKeyError(`cannot read the device key file ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, (err as NodeJS.ErrnoException).code);
  }
  if (key.length !== DEVICE_KEY_BYTES) {
    throw new DeviceKeyError(
      `device key file ${path} holds ${key.length} bytes, expected ${DEVICE_KEY_BYTES}; remove it to generate a new key (tracked devices will be forgotten)`,
    );
  }
  return key;
}

/**
 * Whether anything is at `path`, a symbolic link included: a link is followed when the key is read (the
 * key may be kept elsewhere), but a link to nothing is not a missing key. A new key made there would
 * fail to link over it, or hide that the key it pointed to was lost.
 */
function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Where `path` points when it is a symbolic link to nothing, else undefined. */
function danglingLinkTarget(path: string): string | undefined {
  try {
    if (!lstatSync(path).isSymbolicLink()) return undefined;
    statSync(path);
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') return undefined;
    try {
      return readlinkSync(path);
    } catch {
      return undefined;
    }
  }
}

/**
 * Writes `bytes` to a new 0600 file at `path`, whole or not at all (see loadOrCreateDeviceKey). Answers
 * false when another process created `path` first; that file is kept.
 */
function createWhole(path: string, bytes: Buffer): boolean {
  const staged = `${path}.${randomBytes(6).toString('hex')}.new`;
  const fd = openSync(staged, 'wx', 0o600);
  try {
    try {
      writeSync(fd, bytes);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      linkSync(staged, path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    }
  } finally {
    unlinkSync(staged);
  }
  const dir = openSync(dirname(path), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
  return true;
}

/** The mode bits of a file, e.g. 0o600. */
export function fileMode(path: string): number {
  return statSync(path).mode & 0o777;
}

/** `aa:bb:cc:dd:ee:ff` from any common MAC spelling (colons, dashes, dots, none; any case). */
export function canonicalMac(mac: string): string {
  const hex = mac.replace(/[^0-9a-fA-F]/g, '').toLowerCase();
  if (hex.length !== 12) return mac.trim().toLowerCase();
  return hex.match(/../g)!.join(':');
}

/** Turns MACs into device ids. Keeps a small in-process cache so a steady building costs no HMACs. */
export interface DeviceHasher {
  idOf(mac: string): string;
  /** Forget cached MACs not asked for since the previous call (call once per poll). */
  sweep(): void;
  /** How many MACs the cache holds now. */
  cachedMacs(): number;
}

/** A cached id and the last poll (sweep generation) that asked for it. */
interface CachedId {
  readonly id: string;
  askedIn: number;
}

/**
 * A hasher under `key`. The cache lives in this process only and holds the MACs of the last two polls:
 * a MAC not asked for during a whole poll is forgotten at that poll's sweep, so the cache is bounded by
 * what the APs report, however many randomised MACs pass by over a day.
 *
 * One table lives as long as the hasher: a MAC asked for again (by another AP in the same poll, or in the
 * next poll) costs one lookup and no allocation, and the HMAC is computed once per MAC while it stays.
 *
 * @example
 * const hasher = createDeviceHasher(key);
 * hasher.idOf('AA-BB-CC-DD-EE-FF') === hasher.idOf('aa:bb:cc:dd:ee:ff'); // true
 */
export function createDeviceHasher(key: Buffer): DeviceHasher {
  const cache = new Map<string, CachedId>();
  let poll = 0;
  /** Distinct MACs asked for in this poll: when it equals the cache size, nothing is stale. */
  let askedThisPoll = 0;
  return {
    idOf(mac) {
      const cached = cache.get(mac);
      if (cached !== undefined) {
        if (cached.askedIn !== poll) {
          cached.askedIn = poll;
          askedThisPoll++;
        }
        return cached.id;
      }
      const id = createHmac('sha256', key).update(canonicalMac(mac)).digest('hex');
      cache.set(mac, { id, askedIn: poll });
      askedThisPoll++;
      return id;
    },
    sweep() {
      if (cache.size > askedThisPoll) {
        for (const [mac, cached] of cache) if (cached.askedIn !== poll) cache.delete(mac);
      }
      poll++;
      askedThisPoll = 0;
    },
    cachedMacs: () => cache.size,
  };
}

/** A fingerprint of the key (never the key), so the store can tell when the key was replaced. */
export function keyFingerprint(key: Buffer): string {
  return createHmac('sha256', key).update('lintel-edge device key fingerprint').digest('hex').slice(0, 32);
}
