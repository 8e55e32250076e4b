/**
 * Opening the gateway's SQLite files: WAL journal, a `schema_migrations` table, and the migrations of
 * one module applied in order, each in its own transaction.
 */
import Database from 'better-sqlite3';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nativeBindingForSea } from './native-addon.js';

export type SqliteDatabase = Database.Database;

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
   * commits must survive a power cut; the default (`NORMAL` in WAL mode) may lose them, never corrupt.
   */
  durable?: boolean;
}

/**
 * How long a statement waits for another connection's lock (SQLite's busy_timeout) before it fails with
 * `database is locked`: the collector, doctor's probe and the `ledger` commands may share a file.
 */
export const BUSY_TIMEOUT_MS = 5_000;

/** A database file that cannot be opened or migrated; the message names the file and the step. */
export class StorageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StorageError';
  }
}

/**
 * Opens (creating when allowed) a SQLite file in WAL mode and applies any migration not yet recorded.
 *
 * @example
 * const db = openDatabase('/var/lib/lintel-edge/zones.sqlite', zoneMigrations());
 */
export function openDatabase(path: string, migrations: readonly Migration[], options: OpenOptions = {}): SqliteDatabase {
  if (!options.readonly && !options.mustExist) mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
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
    const code = (err as { code?: string }).code;
    throw new StorageError(`cannot open ${path}: ${code === 'SQLITE_CANTOPEN' || /does not exist/.test((err as Error).message) ? 'no such database file' : (err as Error).message}`);
  }
  if (options.readonly) return db;
  try {
    db.pragma('journal_mode = WAL');
    db.pragma(options.durable ? 'synchronous = FULL' : 'synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    applyMigrations(db, migrations);
  } catch (err) {
    db.close();
    throw err instanceof StorageError ? err : new StorageError(`cannot prepare ${path}: ${(err as Error).message}`);
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
