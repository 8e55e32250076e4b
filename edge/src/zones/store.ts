/**
 * Where the tracker's state lives between polls and across restarts. The port is what the daemon needs;
 * the SQLite adapter is the gateway's.
 */
import { existsSync, renameSync } from 'node:fs';
import type { SafeMessageError } from '../../../shared/describe-error.js';
import { isUnreadableDatabase, openDatabase, prepareStatements, sqliteCodeOf, StorageError, type SqliteDatabase } from '../storage/sqlite.js';
import { zoneMigrations } from './migrations.js';
import type { PollOutcome, TrackedDevice, TrackerState, TransitionEntry, ZonePair } from './types.js';

export interface SaveOptions {
  /**
   * Also remove every stored device the state no longer holds. For the first save after failed ones:
   * the devices that left during those polls were never removed from the file.
   */
  complete?: boolean;
  /**
   * The wall-clock time of the poll (epoch ms), kept for the next start to tell how long the collector
   * was stopped (see resume.ts). Without it, the saved state's time is unknown at the next load.
   */
  at?: number;
  /**
   * The zone pairs the ingest may still hold at a non-zero count (see pairs-at-ingest.ts), for the next
   * start to report them with 0 if they fell meanwhile. Left as saved last when not given.
   */
  pairsAtIngest?: readonly ZonePair[];
}

/** A state file found unreadable and renamed, so that the store could start over on a new one. */
export interface SetAsideFile {
  /** Where the unreadable file is now. */
  path: string;
  /** What SQLite said of it. */
  reason: string;
}

export interface ZoneStore {
  /** The state saved last, or an empty state. */
  load(): TrackerState;
  /**
   * The wall-clock time (epoch ms) of the poll that load() answers, as given to save; undefined when it
   * is not known: nothing saved, or saved without one (a file from before the time was recorded).
   */
  savedAt(): number | undefined;
  /** The zone pairs saved last as SaveOptions.pairsAtIngest; none when nothing was saved so. */
  pairsAtIngest(): ZonePair[];
  /** Persists what one poll changed, atomically. */
  save(outcome: PollOutcome, options?: SaveOptions): void;
  /**
   * Binds the stored ids to the device key by a fingerprint of it. On a new key the stored devices are
   * meaningless (their ids cannot recur), so they are cleared; answers whether that happened.
   */
  bindKey(fingerprint: string): 'kept' | 'cleared';
  /**
   * The files set aside as unreadable since the last call (at open, load, bind or save), for the caller
   * to log, also after a call that failed: the new file may have been what failed (see openSqliteZoneStore).
   */
  takeSetAside(): SetAsideFile[];
  close(): void;
}

interface DeviceRow {
  device_id: string;
  zone: string;
  ap: string;
  rssi_dbm: number;
  challenger_zone: string | null;
  challenger_polls: number;
  frozen_polls: number;
  absent_polls: number;
  last_heard_poll: number;
}

/** The tracker_meta key of the wall-clock time of the poll saved last (epoch ms). */
const POLL_TIME_KEY = 'poll_at_ms';
/** The tracker_meta key of the zone pairs the ingest may hold at a non-zero count: JSON `[[from, to], …]`. */
const PAIRS_AT_INGEST_KEY = 'pairs_at_ingest';

/** The pairs of a PAIRS_AT_INGEST_KEY value; none from a value that is not such a list (edited by hand). */
function pairsOfMeta(value: string | undefined): ZonePair[] {
  if (value === undefined) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  const pairs: ZonePair[] = [];
  for (const item of parsed as unknown[]) {
    if (Array.isArray(item) && item.length === 2 && typeof item[0] === 'string' && typeof item[1] === 'string') pairs.push({ from: item[0], to: item[1] });
  }
  return pairs;
}

/** The statements of one open zone file. */
interface ZoneTables {
  db: SqliteDatabase;
  load(): TrackerState;
  savedAt(): number | undefined;
  pairsAtIngest(): ZonePair[];
  save(outcome: PollOutcome, options: SaveOptions): void;
  bindKey(fingerprint: string): 'kept' | 'cleared';
}

/**
 * Opens (creating and migrating) the zone file as the store does. Durable (`synchronous = FULL`): each
 * save holds the pairs still owed a 0 (SaveOptions.pairsAtIngest) and is made before the tick's batch is
 * appended to the ledger and posted. A save a power cut rolled back would forget a pair that batch then
 * sent with a count above 0, and its 0 would never be reported. It costs one more fsync per tick.
 */
export function openZoneDatabase(path: string): SqliteDatabase {
  return openDatabase(path, zoneMigrations(), { durable: true });
}

/**
 * Opens the file and prepares every statement, so that a damaged schema (a table or column missing) is
 * found here, not mid-poll, as an unreadable file (see prepareStatements), which the store sets aside.
 */
function openTables(path: string): ZoneTables {
  const db = openZoneDatabase(path);
  try {
    return prepareStatements(path, () => prepareTables(db));
  } catch (err) {
    db.close();
    throw err;
  }
}

function prepareTables(db: SqliteDatabase): ZoneTables {
  const upsert = db.prepare(
    `INSERT INTO tracked_devices (device_id, zone, ap, rssi_dbm, challenger_zone, challenger_polls, frozen_polls, absent_polls, last_heard_poll)
     VALUES (@device_id, @zone, @ap, @rssi_dbm, @challenger_zone, @challenger_polls, @frozen_polls, @absent_polls, @last_heard_poll)
     ON CONFLICT (device_id) DO UPDATE SET zone = excluded.zone, ap = excluded.ap, rssi_dbm = excluded.rssi_dbm,
       challenger_zone = excluded.challenger_zone, challenger_polls = excluded.challenger_polls,
       frozen_polls = excluded.frozen_polls, absent_polls = excluded.absent_polls, last_heard_poll = excluded.last_heard_poll`,
  );
  const remove = db.prepare('DELETE FROM tracked_devices WHERE device_id = ?');
  const storedIds = db.prepare('SELECT device_id FROM tracked_devices').pluck();
  const clearTransitions = db.prepare('DELETE FROM zone_transitions');
  const addTransition = db.prepare('INSERT INTO zone_transitions (poll, from_zone, to_zone, count) VALUES (?, ?, ?, ?)');
  const setMeta = db.prepare('INSERT INTO tracker_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value');
  const getMeta = db.prepare('SELECT value FROM tracker_meta WHERE key = ?');
  const deleteMeta = db.prepare('DELETE FROM tracker_meta WHERE key = ?');
  const allDevices = db.prepare('SELECT * FROM tracked_devices');
  const allTransitions = db.prepare('SELECT poll, from_zone, to_zone, count FROM zone_transitions ORDER BY poll, from_zone, to_zone');
  const countDevices = db.prepare('SELECT COUNT(*) AS n FROM tracked_devices');

  /** Removes every stored device not in `devices` (read whole first: no write runs under an open read). */
  const keepOnly = (devices: ReadonlyMap<string, TrackedDevice>) => {
    for (const id of storedIds.all() as string[]) if (!devices.has(id)) remove.run(id);
  };

  const save = db.transaction((outcome: PollOutcome, options: SaveOptions) => {
    const { devices, transitions, poll, transitionWindowPolls } = outcome.state;
    for (const id of outcome.changed) {
      const d = devices.get(id);
      if (!d) continue;
      upsert.run({
        device_id: id,
        zone: d.zone,
        ap: d.ap,
        rssi_dbm: d.rssiDbm,
        challenger_zone: d.challengerZone,
        challenger_polls: d.challengerPolls,
        frozen_polls: d.frozenPolls,
        absent_polls: d.absentPolls,
        last_heard_poll: d.lastHeardPoll,
      });
    }
    if (options.complete) keepOnly(devices);
    else for (const { device } of outcome.removed) remove.run(device);
    clearTransitions.run();
    for (const t of transitions) addTransition.run(t.poll, t.from, t.to, t.count);
    setMeta.run('poll', String(poll));
    // so that a restart with a shorter window still reports the pairs that fall out of it once with 0
    setMeta.run('transition_window_polls', String(transitionWindowPolls));
    // A key of tracker_meta, not a column: a file from before it loads as it is (the time unknown), and
    // an older collector reading this file ignores it. Removed when not given, so that the time saved
    // always belongs to the poll saved.
    if (options.at !== undefined && Number.isFinite(options.at)) setMeta.run(POLL_TIME_KEY, String(options.at));
    else deleteMeta.run(POLL_TIME_KEY);
    // A key of tracker_meta too: it describes the ingest, not the devices, so a new device key keeps it.
    if (options.pairsAtIngest !== undefined) setMeta.run(PAIRS_AT_INGEST_KEY, JSON.stringify(options.pairsAtIngest.map((p) => [p.from, p.to])));
  });

  const clear = db.transaction(() => {
    db.exec('DELETE FROM tracked_devices; DELETE FROM zone_transitions;');
    setMeta.run('poll', '0');
    setMeta.run('transition_window_polls', '0');
    deleteMeta.run(POLL_TIME_KEY);
  });

  return {
    db,
    load() {
      const poll = Number((getMeta.get('poll') as { value: string } | undefined)?.value ?? 0);
      // 0 for a state saved before the window was recorded: a shrink at its first start goes unseen
      const transitionWindowPolls = Number((getMeta.get('transition_window_polls') as { value: string } | undefined)?.value ?? 0);
      const devices = new Map<string, TrackedDevice>();
      for (const row of allDevices.iterate() as IterableIterator<DeviceRow>) {
        devices.set(row.device_id, {
          zone: row.zone,
          ap: row.ap,
          rssiDbm: row.rssi_dbm,
          challengerZone: row.challenger_zone,
          challengerPolls: row.challenger_polls,
          frozenPolls: row.frozen_polls,
          absentPolls: row.absent_polls,
          lastHeardPoll: row.last_heard_poll,
        });
      }
      const transitions = (
        allTransitions.all() as Array<{
          poll: number;
          from_zone: string;
          to_zone: string;
          count: number;
        }>
      ).map((r): TransitionEntry => ({ poll: r.poll, from: r.from_zone, to: r.to_zone, count: r.count }));
      return { poll, devices, transitions, transitionWindowPolls };
    },
    savedAt() {
      const value = (getMeta.get(POLL_TIME_KEY) as { value: string } | undefined)?.value;
      const at = value === undefined ? Number.NaN : Number(value);
      // a value edited by hand into something that is no time is no time known
      return Number.isFinite(at) ? at : undefined;
    },
    pairsAtIngest: () => pairsOfMeta((getMeta.get(PAIRS_AT_INGEST_KEY) as { value: string } | undefined)?.value),
    save: (outcome, options) => save(outcome, options),
    bindKey(fingerprint) {
      const stored = (getMeta.get('key_fingerprint') as { value: string } | undefined)?.value;
      if (stored === fingerprint) return 'kept';
      const hadDevices = (countDevices.get() as { n: number }).n > 0;
      if (stored !== undefined || hadDevices) clear();
      setMeta.run('key_fingerprint', fingerprint);
      return stored !== undefined || hadDevices ? 'cleared' : 'kept';
    },
  };
}

/**
 * A zone file found unreadable that the store could not set aside, or would not (see
 * openSqliteZoneStore). `code` is the errno of the refused rename, or SQLite's for the file.
 */
export class UnreadableZoneFileError extends Error implements SafeMessageError {
  readonly messageIsSafe = true;
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'UnreadableZoneFileError';
  }
}

/**
 * Renames an unreadable zone file and its -wal and -shm, keeping them together under one timestamped
 * name (`zones.sqlite.unreadable-2025-11-22T19-04-14-000Z`, `…-wal`) for whoever wants to look at it.
 */
function setAside(path: string, err: unknown): SetAsideFile {
  const aside = `${path}.unreadable-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  try {
    for (const suffix of ['', '-wal', '-shm']) {
      if (existsSync(`${path}${suffix}`)) renameSync(`${path}${suffix}`, `${aside}${suffix}`);
    }
  } catch (renameErr) {
    const errno = (renameErr as NodeJS.ErrnoException).code;
    throw new UnreadableZoneFileError(`${path} is unreadable (${sqliteCodeOf(err) ?? 'SQLITE_CORRUPT'}) and cannot be set aside (rename: ${errno ?? 'failed'})`, errno);
  }
  return { path: aside, reason: (err as Error).message };
}

/** The error of a file the store made itself that turned out unreadable too: it is not set aside again. */
function unreadableAgain(path: string, err: unknown): UnreadableZoneFileError {
  const code = sqliteCodeOf(err);
  return new UnreadableZoneFileError(
    `${path} is unreadable (${code ?? 'SQLITE_CORRUPT'}), and it is the new file made after the first was set aside: it is not set aside again, so that failing storage does not leave one more copy of the zone state at every save. Check the disk (dmesg), then restart the collector`,
    code,
  );
}

/** `outcome` with every device of its state counted as changed: saved into an empty file, it is the whole state. */
function wholeStateOf(outcome: PollOutcome): PollOutcome {
  return { ...outcome, changed: [...outcome.state.devices.keys()] };
}

/**
 * The SQLite zone store (WAL, migrations). Each save is one transaction, on the disk when it returns
 * (see openZoneDatabase), so a crash or a power cut leaves the state of the poll saved last, never half
 * of one.
 *
 * A file that is not a database or is corrupt (SQLITE_NOTADB, SQLITE_CORRUPT, also a schema that lacks
 * a table or column the store needs) when it is opened, loaded or bound to the key is set aside (see
 * setAside) and the store starts over on a new, empty one: the zone state is rebuilt from the APs
 * within a few polls (docs/decisions/002), and a gateway that would not start over it counts nothing
 * at all. One found so at a save is set aside alike, and the new file gets the whole state the save
 * was given: a file that loads but cannot be written would otherwise fail every save, for good. The
 * export ledger is never treated so (see report/ledger.ts): it is audit evidence.
 *
 * Starting over can fail in turn: the rename refused (a filesystem remounted read-only after errors),
 * or the new file not made (a full disk, no inodes left, an I/O error). The save fails, the store holds
 * no open file, and the next call opens the file at `path` again, whichever it is, and saves the whole
 * state there: the first save that succeeds writes all of it. At most one file is set aside per store:
 * a file it made itself that turns out unreadable too (failing storage, such as a worn SD card) fails
 * the save with an error that says so, at each save, rather than leave one more copy of the state
 * beside it at every poll.
 *
 * @example
 * const store = openSqliteZoneStore('/var/lib/lintel-edge/zones.sqlite');
 * let state = store.load();
 * const outcome = applyPoll(state, observation, config);
 * store.save(outcome, { at: Date.now() });
 */
export function openSqliteZoneStore(path: string): ZoneStore {
  const setAsideFiles: SetAsideFile[] = [];
  let fingerprint: string | undefined;
  /** Whether the file at `path` is one this store made after setting the first aside (see above). */
  let madeHere = false;

  /** The file at `path`, bound to the key this store was bound to. */
  const openBound = (): ZoneTables => {
    const opened = openTables(path);
    try {
      if (fingerprint !== undefined) opened.bindKey(fingerprint);
      return opened;
    } catch (err) {
      opened.db.close();
      throw err;
    }
  };

  const startOver = (err: unknown): ZoneTables => {
    if (madeHere) throw unreadableAgain(path, err);
    setAsideFiles.push(setAside(path, err));
    madeHere = true;
    return openBound();
  };

  /** The open file; undefined after a failure closed it, until the next call opens it again. */
  let tables: ZoneTables | undefined;
  let closed = false;
  try {
    tables = openTables(path);
  } catch (err) {
    if (!isUnreadableDatabase(err)) throw err;
    tables = startOver(err);
  }

  /**
   * Runs `use` over the open file, or `onNew` (by default `use`) over a file opened anew: the one at
   * `path` after a failure closed it, or a new one when the file turns out unreadable.
   */
  const recovering = <T>(use: (t: ZoneTables) => T, onNew: (t: ZoneTables) => T = use): T => {
    if (closed) throw new StorageError(`${path}: the zone store is closed`);
    try {
      if (tables) return use(tables);
      tables = openBound();
      return onNew(tables);
    } catch (err) {
      if (!isUnreadableDatabase(err)) throw err;
      // Forgotten before anything else can fail: should starting over fail, the next call opens the
      // file at `path` again (never a closed connection, which would fail every call for good).
      const failed = tables;
      tables = undefined;
      failed?.db.close();
      tables = startOver(err);
      return onNew(tables);
    }
  };

  return {
    load: () => recovering((t) => t.load()),
    savedAt: () => recovering((t) => t.savedAt()),
    pairsAtIngest: () => recovering((t) => t.pairsAtIngest()),
    // Damage that only a write reaches (a free page list, a page no load reads) is found here: the new
    // file then gets the whole state, not only this poll's changes, or the devices the poll left
    // unchanged would be missing from it at the next start.
    save: (outcome, options = {}) =>
      recovering(
        (t) => t.save(outcome, options),
        (t) => t.save(wholeStateOf(outcome), { ...options, complete: true }),
      ),
    bindKey(value) {
      const bound = recovering((t) => t.bindKey(value));
      fingerprint = value;
      return bound;
    },
    takeSetAside: () => setAsideFiles.splice(0),
    close() {
      if (tables?.db.open) tables.db.close();
      tables = undefined;
      closed = true;
    },
  };
}
