/**
 * The shared PostgreSQL pool on a real server: a connection that fails while a service holds it (a
 * restart, a failover, pg_terminate_backend) fails the work on it and is logged, and the process keeps
 * running: pg emits 'error' on a checked-out client, which without a listener ends the process.
 */
import pg from 'pg';
import t from 'tap';
import { openPgPool } from '../../shared/pg-pool.js';
import { freshPgDatabase } from '../support/stack.js';
import { capturedLogger } from '../support/captured-logger.js';

t.test('a checked-out connection ended by the server fails its query, is logged, and the pool serves on', async (t) => {
  const url = await freshPgDatabase(t);
  const { logger, lines } = capturedLogger('pg-pool-test');
  const pool = openPgPool(url, { max: 2, logger });
  t.teardown(() => pool.end());
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  t.teardown(() => admin.end());

  const client = await pool.connect();
  await client.query('BEGIN');
  const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const sleeping = client.query('SELECT pg_sleep(30)');
  const outcome = sleeping.then(
    () => 'completed',
    (err: Error) => `failed: ${err.message}`,
  );
  await admin.query('SELECT pg_terminate_backend($1)', [pid]);
  t.match(await outcome, /^failed: /, 'the query on the ended connection fails');
  // The 'error' event comes with the connection's end, after the query's rejection.
  for (let i = 0; i < 200 && !lines.some((l) => l.msg === 'PostgreSQL connection failed'); i++) await new Promise((r) => setTimeout(r, 10));
  client.release(true);

  const logged = lines.find((l) => l.msg === 'PostgreSQL connection failed');
  t.ok(logged, 'the failure is logged');
  t.notMatch(JSON.stringify(lines), new URL(url).password || 'no-password-in-url', 'without the connection string');
  t.same((await pool.query<{ one: number }>('SELECT 1 AS one')).rows, [{ one: 1 }], 'the pool serves the next query');
});
