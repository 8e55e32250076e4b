/**
 * The shared migration runner against the stack's PostgreSQL: what an operator reads when a migration
 * cannot run, and the first start of several services at once on an empty database. (Ordering,
 * concurrent starts and shared databases are covered with tenancy's real
 * migrations in test/cloud/tenancy/migrations.test.ts.)
 */
import { mkdtemp, rm, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import t, { type Test } from 'tap';
import { describeError } from '../../shared/describe-error.js';
import { MigrationError, runMigrations } from '../../shared/pg-migrations.js';
import { freshPgDatabase } from '../support/stack.js';

async function setup(t: Test) {
  const pool = new pg.Pool({ connectionString: await freshPgDatabase(t), max: 2 });
  pool.on('error', () => undefined);
  t.teardown(() => pool.end());
  const dir = await mkdtemp(join(tmpdir(), 'lintel-migrations-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return { pool, dir };
}

t.test('a failing migration is rolled back and named, with the database error code only', async (t) => {
  const { pool, dir } = await setup(t);
  await writeFile(join(dir, '0001_rooms.sql'), 'CREATE TABLE rooms (id text PRIMARY KEY);');
  await writeFile(join(dir, '0002_broken.sql'), "CREATE TABLE sensors (id text PRIMARY KEY);\nINSERT INTO rooms VALUES ('r1');\nSELEC 'secret-in-sql';");

  const err = await runMigrations(pool, 'demo', dir).catch((e: unknown) => e);
  t.ok(err instanceof MigrationError, 'a MigrationError');
  t.equal((err as Error).message, 'demo migration 0002_broken.sql failed (error (42601)); none of it was applied');
  t.match((err as Error).cause, { code: '42601' }, 'the driver error is kept as the cause');
  const logged = describeError(err);
  t.equal(logged, 'MigrationError: demo migration 0002_broken.sql failed (error (42601)); none of it was applied', 'a log line names the file');
  t.notMatch(logged, /SELEC|secret-in-sql/, 'without the SQL');

  const tables = await pool.query<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1");
  t.same(tables.rows.map((r) => r.name), ['rooms', 'schema_migrations'], 'the broken file left nothing behind');
  t.same((await pool.query('SELECT count(*)::int AS n FROM rooms')).rows[0], { n: 0 });
  const recorded = await pool.query<{ version: string }>("SELECT version FROM schema_migrations WHERE service = 'demo'");
  t.same(recorded.rows.map((r) => r.version), ['0001_rooms'], 'only the good file is recorded');

  await writeFile(join(dir, '0002_broken.sql'), 'CREATE TABLE sensors (id text PRIMARY KEY);');
  t.same((await runMigrations(pool, 'demo', dir)).applied, ['0002_broken'], 'once fixed, it applies on the next start');
});

t.test('a file changed after it was applied is logged with its name', async (t) => {
  const { pool, dir } = await setup(t);
  await writeFile(join(dir, '0001_rooms.sql'), 'CREATE TABLE rooms (id text PRIMARY KEY);');
  await runMigrations(pool, 'demo', dir);
  await appendFile(join(dir, '0001_rooms.sql'), '\n-- edited\n');
  const err = await runMigrations(pool, 'demo', dir).catch((e: unknown) => e);
  t.equal(describeError(err), 'MigrationError: demo migration 0001_rooms.sql changed after it was applied; add a new migration instead');
});

t.test('a .sql file that does not follow the naming is refused by name, not skipped', async (t) => {
  const { pool, dir } = await setup(t);
  await writeFile(join(dir, '0001_rooms.sql'), 'CREATE TABLE rooms (id text PRIMARY KEY);');
  await writeFile(join(dir, '0002-sensors.sql'), 'CREATE TABLE sensors (id text PRIMARY KEY);');
  await writeFile(join(dir, '003_Zones.sql'), 'CREATE TABLE zones (id text PRIMARY KEY);');
  await writeFile(join(dir, 'README.md'), 'notes, not a migration');
  const err = await runMigrations(pool, 'demo', dir).catch((e: unknown) => e);
  t.equal(
    describeError(err),
    'MigrationError: demo migration files not named NNNN_name.sql (four digits, "_", then a-z, 0-9 or "_") would never run; rename 0002-sensors.sql, 003_Zones.sql',
  );
  const tables = await pool.query<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1");
  t.same(tables.rows.map((r) => r.name), [], 'nothing applied: the service does not start on half its schema');
});

t.test('services starting together on an empty database all create their bookkeeping', async (t) => {
  // Every service shares schema_migrations; the first start of several at once used to race on
  // creating it (PostgreSQL's CREATE TABLE IF NOT EXISTS is not safe against a concurrent create).
  const services = Array.from({ length: 6 }, (_, i) => `service${i}`);
  for (let round = 0; round < 5; round++) {
    const pool = new pg.Pool({ connectionString: await freshPgDatabase(t), max: services.length });
    pool.on('error', () => undefined);
    t.teardown(() => pool.end());
    const dir = await mkdtemp(join(tmpdir(), 'lintel-migrations-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    await writeFile(join(dir, '0001_init.sql'), 'SELECT 1;');
    const results = await Promise.all(services.map((service) => runMigrations(pool, service, dir)));
    t.same(results.map((r) => r.applied), services.map(() => ['0001_init']), `round ${round + 1}: each service applied its migration`);
  }
});
