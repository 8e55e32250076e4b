/**
 * The PostgreSQL pool every SQL-backed service opens the same way: bounded size, a connect timeout, and
 * failures of idle connections logged safely instead of crashing the process.
 */
import pg from 'pg';
import type { Logger } from 'pino';
import { DependencyUnreachable, describeError } from './describe-error.js';

/**
 * Opens a pool for a composition root.
 *
 * @example
 * const pool = openPgPool(env.DATABASE_URL, { max: 16, logger });
 */
export function openPgPool(connectionString: string, options: { max: number; logger: Logger }): pg.Pool {
  const pool = new pg.Pool({ connectionString, max: options.max, connectionTimeoutMillis: 5000 });
  pool.on('error', (err) => options.logger.warn({ error: describeError(err) }, 'idle PostgreSQL connection failed'));
  return pool;
}

/**
 * Opens one connection and releases it, so a start against an unreachable database fails with one
 * clear line naming it ({@link DependencyUnreachable}) before migrations run.
 *
 * @example
 * await reachPostgres(pool, env.DATABASE_URL);
 */
export async function reachPostgres(pool: pg.Pool, databaseUrl: string): Promise<void> {
  const client = await pool.connect().catch((err: unknown) => {
    throw new DependencyUnreachable('PostgreSQL', databaseUrl, err);
  });
  client.release();
}
