/**
 * Diagnostic, not the benchmark: what round trip 1 of a batch (store/opening.ts) costs PostgreSQL, on a
 * fresh migrated database on the stack (`npx tsx tools/bench/telemetry/opening-plan.ts`).
 * - `EXPLAIN ANALYZE` of the opening statement as a prepared statement on a custom plan (what
 *   PostgreSQL chose for it on its own): its planning and execution times;
 * - the backend's CPU per opening, from /proc, over OPENING_PLAN_ROUNDS openings (default 2,000), each
 *   in its own transaction, rolled back: the statement planned anew for every execution (as PostgreSQL
 *   chose before the service set the generic plan) and on its generic plan, both sent the same way;
 *   then `open()` as ingest runs it, and BEGIN and ROLLBACK alone;
 * - `ratio:` generic over custom, last.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { migrate } from '../../../cloud/telemetry/store/migrate.js';
import { OPENING_SQL, open, type OpeningParams } from '../../../cloud/telemetry/store/opening.js';
import { printLine } from '../report.js';
import { cpuTimesOfPid } from './cpu.js';

const ROUNDS = Number(process.env.OPENING_PLAN_ROUNDS ?? 2000);
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://lintel@127.0.0.1:55432/lintel';

async function main(): Promise<void> {
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  const dbName = `bench_opening_${randomUUID().replace(/-/g, '').slice(0, 8)}`;
  await admin.query(`CREATE DATABASE ${dbName}`);
  const url = new URL(DATABASE_URL);
  url.pathname = `/${dbName}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 2 });
  try {
    await migrate(pool);
    const client = await pool.connect();
    try {
      const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const backendCpu = () => {
        const { user, system } = cpuTimesOfPid(pid);
        return user + system;
      };
      const now = Date.now();
      const params = (batchId: string): OpeningParams => ({
        keyId: '',
        batchId,
        accepted: 500,
        oldest: now,
        buildings: ['bench-1'],
        boundedMetrics: ['peopleCount', 'temperature'],
        hours: [Math.floor(now / 3_600_000) * 3_600_000],
      });
      /** Backend CPU µs per call of `step`, after a warm-up of 200. */
      const perCall = async (step: (i: number) => Promise<unknown>) => {
        for (let i = 0; i < 200; i++) await step(-1 - i);
        const before = backendCpu();
        for (let i = 0; i < ROUNDS; i++) await step(i);
        return ((backendCpu() - before) * 1e6) / ROUNDS;
      };

      await client.query(`PREPARE opening AS ${OPENING_SQL}`);
      await client.query('SET plan_cache_mode = force_custom_plan');
      const literal = (p: OpeningParams) =>
        `'${p.keyId}', '${p.batchId}', ${p.accepted}, ${p.oldest}, '{${p.buildings.join(',')}}', '{${p.boundedMetrics.join(',')}}', '{${p.hours.join(',')}}'`;
      // Warm (catalog caches loaded), then explained, all rolled back.
      await client.query('BEGIN');
      for (let i = 0; i < 8; i++) await client.query(`EXECUTE opening(${literal(params(`warm-${i}`))})`);
      const plan = (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, SUMMARY) EXECUTE opening(${literal(params('explain'))})`)).rows.map((r) => r['QUERY PLAN']);
      const time = (label: string) => Number(new RegExp(`^${label} Time: ([\\d.]+) ms`).exec(plan.find((l) => l.startsWith(`${label} Time:`)) ?? '')?.[1] ?? NaN);
      await client.query('ROLLBACK');
      printLine('custom plan: planning time', time('Planning').toFixed(3), 'ms');
      printLine('custom plan: execution time', time('Execution').toFixed(3), 'ms');
      await client.query('DEALLOCATE opening');

      const run = randomUUID().slice(0, 8);
      const values = (p: OpeningParams) => [p.keyId, p.batchId, p.accepted, p.oldest, p.buildings, p.boundedMetrics, p.hours];
      /** The opening statement, prepared by name, in a transaction that sets how it is planned. */
      const openingPlanned = (mode: 'force_generic_plan' | 'force_custom_plan') => async (i: number) => {
        await client.query('BEGIN');
        await client.query('SELECT set_config($1, $2, true)', ['plan_cache_mode', mode]);
        await client.query({ name: 'opening-plan-diagnostic', text: OPENING_SQL, values: values(params(`${mode}-${run}-${i}`)) });
        await client.query('ROLLBACK');
      };
      const custom = await perCall(openingPlanned('force_custom_plan'));
      const generic = await perCall(openingPlanned('force_generic_plan'));
      const shipped = await perCall(async (i) => {
        await open(client, params(`open-${run}-${i}`));
        await client.query('ROLLBACK');
      });
      const beginRollback = await perCall(async () => {
        await client.query('BEGIN');
        await client.query('ROLLBACK');
      });
      printLine('BEGIN + ROLLBACK alone, backend CPU', beginRollback.toFixed(0), 'us');
      printLine('opening planned anew per execution (custom plan), backend CPU', custom.toFixed(0), 'us');
      printLine('opening on its generic plan, backend CPU', generic.toFixed(0), 'us');
      printLine('open() as ingest runs it (one round trip) + ROLLBACK, backend CPU', shipped.toFixed(0), 'us');
      printLine('ratio', (generic / custom).toFixed(2));
    } finally {
      client.release();
    }
  } finally {
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
  }
}

main().catch((err: unknown) => {
  console.error(`opening-plan failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
