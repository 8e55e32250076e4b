/**
 * A unique PostgreSQL database per test file on the stack's server, dropped at teardown. An optional
 * TimeZone is set on the database, so every session of the service sees it (the +05:30 and DST cases).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { migrate } from '../../../../cloud/telemetry/store/migrate.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export function stackDatabaseUrl(): string {
  return process.env.DATABASE_URL ?? 'postgres://lintel@127.0.0.1:55432/lintel';
}

export async function freshPgDatabase(t: Teardown, options: { timeZone?: string } = {}): Promise<string> {
  const adminUrl = stackDatabaseUrl();
  const name = `t_telemetry_${process.pid}_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    if (options.timeZone) await admin.query(`ALTER DATABASE ${name} SET TimeZone = ${pg.escapeLiteral(options.timeZone)}`);
  } finally {
    await admin.end();
  }
  t.teardown(async () => {
    const dropper = new pg.Client({ connectionString: adminUrl });
    await dropper.connect();
    try {
      await dropper.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await dropper.end();
    }
  });
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * pool.end() resolves once its clients are told to close, not once they have; the database drop that
 * follows can end a closing connection, which the pool reports as an 'error' event with no listener.
 * That error is expected at teardown and nothing else reads this pool by then.
 */
export function quietAtTeardown(pool: pg.Pool): pg.Pool {
  pool.on('error', () => undefined);
  return pool;
}

/** A migrated database and a pool on it, ended at teardown (before the database is dropped). */
export async function migratedPool(t: Teardown, options: { timeZone?: string } = {}): Promise<pg.Pool> {
  const url = await freshPgDatabase(t, options);
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  quietAtTeardown(pool);
  t.teardown(() => pool.end());
  await migrate(pool);
  return pool;
}
