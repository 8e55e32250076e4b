/**
 * Opening the gateway's SQLite files: WAL journal, a `schema_migrations` table, and the migrations of
 * one module applied in order, each in its own transaction.
 */
import Database from 'better-sqlite3';
import { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, statfsSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nativeBindingForSea } from './native-addon.js';
import { describeOwnership } from './ownership.js';

export type SqliteDatabase = Database.Database;
export type SqliteStatement = Database.Statement;

/** One schema step: `id` is its file name without `.sql`, applied once, in id order. */
export interface Migration {
  id: string;
  sql: string;
}

/**
 * The `*.sql` files of a migrations folder, in name order. The executable bundle replaces calls of this
 * function with the files' contents (see edge/build/bundle.mjs), since it carries no source tree.
 *
 * @example
 * readMigrations(new URL('./migrations/', import.meta.url));
 */
export function readMigrations(folder: URL): Migration[] {
  const path = fileURLToPath(folder);
  return readdirSync(path)
    .filter((name) => name.endsWith('.sql'))
    .sort()
    .map((name) => ({ id: name.slice(0, -'.sql'.length), sql: readFileSync(`${path}/${name}`, 'utf8') }));
}

export interface OpenOptions {
  /** Open for reading only (auditing tools); no migration is applied. */
  readonly?: boolean;
  /** Fail rather than create a new file. */
  mustExist?: boolean;
  /**
   * Every commit reaches the disk before it returns (`synchronous = FULL`), for a file whose last
   * commits must survive a power cut (the zone state and the ledger both are: see their stores); the
   * default (`NORMAL` in WAL mode) may lose them, never corrupt.
   */
  durable?: boolean;
}

/**
 * How long a statement waits for another connection's lock (SQLite's busy_timeout) before it fails with
 * `database is locked`: the collector, doctor's probe and the `ledger` commands may share a file.
 */
export const BUSY_TIMEOUT_MS = 5_000;

/**
 * A database file that cannot be opened, migrated or prepared; the message names the file and the step.
 * `code` is SQLite's (`SQLITE_NOTADB`, `SQLITE_READONLY`, …), or the one it would give for a file refused
 * before opening, or SQLITE_CORRUPT for a schema that lacks what the statements need (see
 * prepareStatements), so a caller can tell a file that is not a database from one it may not write.
 */
export class StorageError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'StorageError';
  }
}

/** SQLite's error code of `err`, if it has one. */
export function sqliteCodeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : undefined;
}

/**
 * Whether `err` says the file is not a SQLite database, or a damaged one (SQLITE_NOTADB, SQLITE_CORRUPT
 * and its extended codes, also a schema that lacks a table or column: see prepareStatements): no retry
 * or permission change will make it readable.
 */
export function isUnreadableDatabase(err: unknown): boolean {
  return /^SQLITE_(NOTADB|CORRUPT)/.test(sqliteCodeOf(err) ?? '');
}

/**
 * Runs `prepare`, which prepares the statements of a file whose migrations ran: at open, so that a
 * damaged schema is found there, not mid-poll. SQLite refuses such a statement with SQLITE_ERROR (no such
 * table, no such column) when the file lacks what its recorded migrations made: a table dropped by hand,
 * or a file a newer version migrated before a downgrade. No retry cures that, so it is thrown as a
 * StorageError coded SQLITE_CORRUPT, naming the file and what is missing, which isUnreadableDatabase
 * accepts: the zone store sets such a file aside, and a start over such a ledger stops with exit 2. Any
 * other failure (a lock, an I/O error) is thrown as it is.
 *
 * @example
 * const last = prepareStatements(path, () => db.prepare('SELECT seq, hash FROM ledger_entries ORDER BY seq DESC LIMIT 1'));
 */
export function prepareStatements<T>(path: string, prepare: () => T): T {
  try {
    return prepare();
  } catch (err) {
    if (sqliteCodeOf(err) !== 'SQLITE_ERROR') throw err;
    throw new StorageError(
      `${path} is damaged: ${(err as Error).message} (a table or column removed by hand, or the file changed by a newer version of lintel-edge)`,
      'SQLITE_CORRUPT',
    );
  }
}

/**
 * Errnos with which a directory refuses this user new files for good: a permission, a read-only mount.
 * Any other (ENOSPC with no inodes left, EDQUOT, EMFILE, EIO) may pass, and SQLite's message stands.
 */
const DIRECTORY_REFUSALS = new Set(['EACCES', 'EPERM', 'EROFS']);

/** The errno with which `dir` refuses this user new files (see DIRECTORY_REFUSALS), or undefined. */
function directoryRefusal(dir: string): string | undefined {
  try {
    accessSync(dir, constants.W_OK);
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code !== undefined && DIRECTORY_REFUSALS.has(code) ? code : undefined;
  }
}

/** `dir`, refusing new files with `errno`, in words an operator can act on. */
function describeRefusingDirectory(dir: string, errno: string): string {
  return `${dir} refuses new files to this user (${errno}): it is ${describeOwnership(dir)}; run as the directory's owner, or make it the service user's (install -d -m 0700 -o lintel-edge -g lintel-edge ${dir})`;
}

/** Why a directory that allows new files could not take one: what its filesystem says, else a guess. */
function passingCause(dir: string): string {
  try {
    const fs = statfsSync(dir);
    // A count of 0 is a filesystem that keeps none (tmpfs without a limit), not one with none left.
    if (fs.files > 0 && fs.ffree === 0) return `the filesystem of ${dir} has no free inodes`;
    if (fs.blocks > 0 && fs.bavail === 0) return `the filesystem of ${dir} is full`;
  } catch {
    // the guess below stands
  }
  return `${dir} allows new files: a cause that may pass, such as a quota or too many open files`;
}

/**
 * Why `path` could not be opened, from SQLite's error and what the filesystem says: SQLite answers
 * SQLITE_CANTOPEN alike for a missing file, one this user may not read, one it may not create, and one
 * it could not create for a passing reason (a full disk, no inodes left, a quota, too many open files).
 * Only a directory that refuses this user (a permission, a read-only mount) is named as the cause; the
 * messages `startFailureExitCode` (commands/run.ts) reads as lasting are `permission denied: `,
 * `cannot create it: ` and `cannot create its -wal or -shm: `.
 */
function whyCannotOpen(path: string, err: unknown, mustExist: boolean): string {
  const message = (err as Error).message;
  if (sqliteCodeOf(err) !== 'SQLITE_CANTOPEN' && !/does not exist/.test(message)) return message;
  const dir = dirname(path);
  if (!existsSync(path)) {
    if (mustExist || !existsSync(dir)) return 'no such database file';
    const refusal = directoryRefusal(dir);
    if (refusal === undefined) return `${message} (${passingCause(dir)})`;
    return `cannot create it: ${describeRefusingDirectory(dir, refusal)}`;
  }
  try {
    accessSync(path, constants.R_OK);
  } catch {
    return `permission denied: it is ${describeOwnership(path)} (run as the file's owner, or chown it to the service user)`;
  }
  return whyJournalRefused(path) ?? `${message} (missing, or permission denied)`;
}

/**
 * For a file that exists: when its directory refuses this user new files, SQLite cannot create the
 * -wal and -shm it needs to read or write it (SQLITE_CANTOPEN, SQLITE_READONLY_DIRECTORY). Says so,
 * naming the directory; undefined when the directory allows them.
 */
function whyJournalRefused(path: string): string | undefined {
  const dir = dirname(path);
  const refusal = directoryRefusal(dir);
  return refusal === undefined ? undefined : `cannot create its -wal or -shm: ${describeRefusingDirectory(dir, refusal)}`;
}

/**
 * `err`, explained for an operator. A file SQLite cannot open (SQLITE_CANTOPEN) or write
 * (SQLITE_READONLY_DIRECTORY) for want of its -wal and -shm names the directory that refuses them. A
 * write refused as read-only names the file's owner and mode, since that is nearly always a file
 * another user created (a root `lintel-edge doctor`).
 */
export function explainStorageFailure(path: string, err: unknown): string {
  const message = (err as Error).message;
  const code = sqliteCodeOf(err) ?? '';
  if (code === 'SQLITE_CANTOPEN' || code === 'SQLITE_READONLY_DIRECTORY') {
    const journal = whyJournalRefused(path);
    if (journal !== undefined) return `${message}: ${journal}`;
  }
  if (!/^SQLITE_READONLY/.test(code)) return message;
  return `${message}: ${path} is ${describeOwnership(path)}; run as the file's owner, or chown it (and any -wal and -shm beside it) to the service user`;
}

/**
 * Refuses, before SQLite opens it, a file (or its -wal or -shm) that exists and this user may not write.
 * SQLite would quietly open it read-only and fail only at the first write, mid-start or mid-poll.
 */
function refuseUnwritable(path: string): void {
  const [unwritable] = unwritableFiles(path);
  if (unwritable === undefined) return;
  const { file } = unwritable;
  throw new StorageError(
    `cannot write ${file}: it is ${describeOwnership(file)}; run as the file's owner, or chown it to the service user (root leaves such files, e.g. \`sudo lintel-edge doctor\`)`,
    'SQLITE_READONLY',
  );
}

/**
 * The files of the database at `path` (it, and the -wal and -shm beside it) that exist and this user
 * may not write, with why: what {@link openDatabase} refuses to open for writing (doctor asks too).
 */
export function unwritableFiles(path: string): Array<{ file: string; code: string }> {
  const unwritable: Array<{ file: string; code: string }> = [];
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    if (!existsSync(file)) continue;
    try {
      accessSync(file, constants.W_OK);
    } catch (err) {
      unwritable.push({ file, code: (err as NodeJS.ErrnoException).code ?? 'error' });
    }
  }
  return unwritable;
}

/**
 * Opens (creating when allowed) a SQLite file in WAL mode and applies any migration not yet recorded.
 *
 * @example
 * const db = openDatabase('/var/lib/lintel-edge/zones.sqlite', zoneMigrations());
 */
export function openDatabase(path: string, migrations: readonly Migration[], options: OpenOptions = {}): SqliteDatabase {
  if (!options.readonly && !options.mustExist) mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  if (!options.readonly) refuseUnwritable(path);
  let db: SqliteDatabase;
  try {
    const nativeBinding = nativeBindingForSea();
    // The typings only know the string form; better-sqlite3 also takes the loaded addon object.
    const openOptions = {
      readonly: options.readonly ?? false,
      timeout: BUSY_TIMEOUT_MS,
      fileMustExist: options.readonly === true || options.mustExist === true,
      ...(nativeBinding ? { nativeBinding } : {}),
    } as Database.Options;
    db = new Database(path, openOptions);
  } catch (err) {
    throw new StorageError(`cannot open ${path}: ${whyCannotOpen(path, err, options.readonly === true || options.mustExist === true)}`, sqliteCodeOf(err));
  }
  if (options.readonly) return db;
  try {
    db.pragma('journal_mode = WAL');
    db.pragma(options.durable ? 'synchronous = FULL' : 'synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    applyMigrations(db, migrations);
  } catch (err) {
    db.close();
    throw err instanceof StorageError ? err : new StorageError(`cannot prepare ${path}: ${explainStorageFailure(path, err)}`, sqliteCodeOf(err));
  }
  return db;
}

/** Applies, in id order, every migration not yet in `schema_migrations`. */
export function applyMigrations(db: SqliteDatabase, migrations: readonly Migration[]): string[] {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)');
  const done = new Set((db.prepare('SELECT id FROM schema_migrations').all() as Array<{ id: string }>).map((r) => r.id));
  const applied: string[] = [];
  const isDone = db.prepare('SELECT 1 FROM schema_migrations WHERE id = ?');
  const record = db.prepare('INSERT INTO schema_migrations (id, applied_at) VALUES (?, ?)');
  // IMMEDIATE, and checked again inside: another process opening the same file at once (a second
  // gateway, doctor) may have applied the step since the read above; it is then skipped, not run twice.
  const apply = db.transaction((migration: Migration): boolean => {
    if (isDone.get(migration.id)) return false;
    db.exec(migration.sql);
    record.run(migration.id, Date.now());
    return true;
  });
  for (const migration of [...migrations].sort((a, b) => a.id.localeCompare(b.id))) {
    if (done.has(migration.id)) continue;
    if (apply.immediate(migration)) applied.push(migration.id);
  }
  return applied;
}
