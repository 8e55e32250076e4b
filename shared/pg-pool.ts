/**
 * The PostgreSQL pool every SQL-backed service opens the same way: bounded size, a connect timeout, and
 * failures of connections logged safely instead of crashing the process.
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
  // pg emits 'error' on a client whose connection fails (a restart, a failover, a terminated backend).
  // The pool listens only while the client is idle: one checked out, in a transaction, would end the
  // process. So every client gets a listener for its whole life; the work on it fails on its own (its
  // query rejects), and the pool drops the client when it is released with that error or goes idle.
  pool.on('connect', (client) => {
    client.on('error', (err) => options.logger.warn({ error: describeError(err) }, 'PostgreSQL connection failed'));
  });
  // An idle client's failure reaches the pool too; the client's own listener has logged it.
  pool.on('error', () => undefined);
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
