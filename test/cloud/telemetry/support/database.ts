/**
 * A migrated PostgreSQL database per test on the stack's server (test/support/stack.ts), optionally
 * with a TimeZone set on the database so every session of the service runs in it (the +05:30 and DST
 * cases).
 */
import { copyFile, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { MIGRATIONS_DIR, migrate } from '../../../../cloud/telemetry/store/migrate.js';
import { runMigrations } from '../../../../shared/pg-migrations.js';
import { freshPgDatabase as freshDatabase, stackEnv, type Teardown } from '../../../support/stack.js';

export async function freshPgDatabase(t: Teardown, options: { timeZone?: string } = {}): Promise<string> {
  const url = await freshDatabase(t);
  if (options.timeZone) {
    const admin = new pg.Client({ connectionString: stackEnv().DATABASE_URL });
    await admin.connect();
    try {
      await admin.query(`ALTER DATABASE ${new URL(url).pathname.slice(1)} SET TimeZone = ${pg.escapeLiteral(options.timeZone)}`);
    } finally {
      await admin.end();
    }
  }
  return url;
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
  const pool = quietAtTeardown(new pg.Pool({ connectionString: url, max: 10 }));
  t.teardown(() => pool.end());
  await migrate(pool);
  return pool;
}

/**
 * A pool on a fresh database holding the schema as deployed before migration `version` (e.g. '0005'):
 * every migration file before it, applied by the kernel's runner from a copy in the test's directory.
 * Ended at teardown. The test then inserts old rows and runs `migrate` to upgrade.
 */
export async function poolMigratedBefore(t: Teardown & { testdir(): string }, version: string): Promise<pg.Pool> {
  const url = await freshPgDatabase(t);
  const pool = quietAtTeardown(new pg.Pool({ connectionString: url, max: 10 }));
  t.teardown(() => pool.end());
  const before = join(t.testdir(), 'migrations');
  await mkdir(before, { recursive: true });
  for (const file of (await readdir(MIGRATIONS_DIR)).filter((f) => f < version)) await copyFile(join(MIGRATIONS_DIR, file), join(before, file));
  await runMigrations(pool, 'telemetry', before);
  return pool;
}
