/**
 * For listings written a page at a time (shared/array-in-pages.ts): a page read that loses its
 * connection to PostgreSQL mid-listing, and the body a client got as far as it came.
 */
import type pg from 'pg';
import { untilSessionsWaitForLocks } from './stack.js';

/**
 * Runs `read` with its query made to wait on a lock of `table` and its backend then terminated: the
 * connection to PostgreSQL is lost in the middle of the read.
 */
export async function readWithConnectionLost<T>(pool: pg.Pool, table: string, read: () => Promise<T>): Promise<T> {
  const locker = await pool.connect();
  try {
    await locker.query('BEGIN');
    await locker.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    const reading = read();
    reading.catch(() => undefined);
    await untilSessionsWaitForLocks(pool);
    await pool.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    return await reading;
  } finally {
    await locker.query('ROLLBACK');
    locker.release();
  }
}

/** The body as far as it arrived, and the error that broke it off (undefined when it ended). */
export async function bodyAsFarAsItCame(body: AsyncIterable<Buffer>): Promise<{ received: string; broken: unknown }> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of body) chunks.push(chunk);
    return { received: Buffer.concat(chunks).toString('utf8'), broken: undefined };
  } catch (err) {
    return { received: Buffer.concat(chunks).toString('utf8'), broken: err };
  }
}
