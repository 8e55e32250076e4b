/**
 * Applies a service's `migrations/*.sql` files in name order, once each, at start.
 *
 * - `schema_migrations(service, version, checksum, applied_at)` records what ran, so a restart applies
 *   nothing twice; several services may share one database because rows are keyed by service.
 * - A session advisory lock keyed by the service name serialises concurrent starts: the second replica
 *   waits, then finds everything applied. A second lock, shared by all services, serialises creating
 *   the bookkeeping table, which services starting together on an empty database would race on.
 * - Each file runs in its own transaction together with its bookkeeping row.
 * - A `.sql` file not named `NNNN_name.sql` is refused, naming it, rather than silently never run.
 * - A file changed after it was applied is refused, naming the file, rather than silently diverging;
 *   a file that fails is rolled back and reported with its name and the database's error code.
 *
 * Every PostgreSQL-backed service (tenancy, registry, telemetry) uses this one runner.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import { describeError, type SafeMessageError } from './describe-error.js';
import { openPgPool, reachPostgres } from './pg-pool.js';

/**
 * A migration that cannot run. Its message names the service and file, so it is logged in full (see
 * {@link describeError}).
 */
export class MigrationError extends Error implements SafeMessageError {
  readonly messageIsSafe = true;
  constructor(message: string, options?: { cause: unknown }) {
    super(message, options);
    this.name = 'MigrationError';
  }
}

export interface MigrationResult {
  /** Versions applied by this call, in order. */
  applied: string[];
}

/** A migration's file name: applied in name order, recorded without `.sql`. */
const MIGRATION_FILE = /^\d{4}_[a-z0-9_]+\.sql$/;

/** Serialises creating the bookkeeping table across services. */
const BOOKKEEPING_LOCK = 'lintel-migrations:schema_migrations';

const BOOKKEEPING = `
CREATE TABLE IF NOT EXISTS schema_migrations (
  service    text        NOT NULL,
  version    text        NOT NULL,
  checksum   text        NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (service, version)
)`;

/**
 * Runs every pending migration of `service` found in `directory`.
 *
 * @example
 * await runMigrations(pool, 'tenancy', new URL('./migrations/', import.meta.url).pathname);
 */
export async function runMigrations(pool: Pool, service: string, directory: string): Promise<MigrationResult> {
  const files = (await readdir(directory)).filter((f) => /\.sql$/i.test(f)).sort();
  // A misnamed file would be skipped for ever while the service runs on without its change.
  const misnamed = files.filter((f) => !MIGRATION_FILE.test(f));
  if (misnamed.length > 0) {
    throw new MigrationError(`${service} migration files not named NNNN_name.sql (four digits, "_", then a-z, 0-9 or "_") would never run; rename ${misnamed.join(', ')}`);
  }
  const scripts = await Promise.all(
    files.map(async (file) => {
      const sql = await readFile(join(directory, file), 'utf8');
      return { version: file.replace(/\.sql$/, ''), sql, checksum: createHash('sha256').update(sql).digest('hex') };
    }),
  );
  const client = await pool.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [`lintel-migrations:${service}`]);
    try {
      // The bookkeeping table is shared by every service, and CREATE TABLE IF NOT EXISTS is not safe
      // against a concurrent create (the loser fails on the table's row type): services starting
      // together on an empty database create it one at a time. The lock is held only for this
      // statement, never while waiting for another, so it cannot deadlock with the service locks.
      await client.query('SELECT pg_advisory_lock(hashtext($1))', [BOOKKEEPING_LOCK]);
      try {
        await client.query(BOOKKEEPING);
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtext($1))', [BOOKKEEPING_LOCK]);
      }
      const done = await client.query<{ version: string; checksum: string }>(
        'SELECT version, checksum FROM schema_migrations WHERE service = $1',
        [service],
      );
      const known = new Map(done.rows.map((r) => [r.version, r.checksum]));
      for (const script of scripts) {
        const previous = known.get(script.version);
        if (previous !== undefined) {
          if (previous !== script.checksum) {
            throw new MigrationError(`${service} migration ${script.version}.sql changed after it was applied; add a new migration instead`);
          }
          continue;
        }
        await client.query('BEGIN');
        try {
          await client.query(script.sql);
          await client.query('INSERT INTO schema_migrations (service, version, checksum) VALUES ($1, $2, $3)', [
            service,
            script.version,
            script.checksum,
          ]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK');
          throw new MigrationError(`${service} migration ${script.version}.sql failed (${describeError(err)}); none of it was applied`, { cause: err });
        }
        applied.push(script.version);
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [`lintel-migrations:${service}`]);
    }
  } finally {
    client.release();
  }
  return { applied };
}

/**
 * A service's pool, ready to serve: opened on `databaseUrl`, PostgreSQL reached (one clear line when it
 * is not) and the service's migrations applied, those applied logged. Ended again when a step fails.
 *
 * @example
 * const pool = await openMigratedPool(env.DATABASE_URL, 'registry', MIGRATIONS, { max: 10, logger });
 */
export async function openMigratedPool(databaseUrl: string, service: string, directory: string, options: { max: number; logger: Logger }): Promise<Pool> {
  const pool = openPgPool(databaseUrl, options);
  try {
    await reachPostgres(pool, databaseUrl);
    const { applied } = await runMigrations(pool, service, directory);
    if (applied.length > 0) options.logger.info({ applied }, 'migrations applied');
    return pool;
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw err;
  }
}
