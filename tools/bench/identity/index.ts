/**
 * bench:identity — tenancy's login path against its limit.
 *
 * Sets up its own database on the local stack (tools/stack), seeds 4,000 accounts with 5 memberships
 * each across 200 domains, starts tenancy (`cloud/tenancy/main.ts`) as its own process, then measures
 * for a fixed time each, at 32 concurrent callers:
 *   - GET /internal/memberships?accountId= (signed) over HTTP: the login path;
 *   - the same query run directly through pg with 32 connections: the limit;
 *   - POST /invite-codes/{code}/redeem over HTTP, each caller redeeming fresh codes.
 * Prints one figure per line, and `ratio:` (login path ÷ direct query) last.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Pool as HttpPool } from 'undici';
import { encodeClaims } from '../../../shared/claims.js';
import { sign } from '../../../shared/hmac.js';
import { runMigrations } from '../../../shared/pg-migrations.js';
import { MEMBERSHIPS_OF_SQL } from '../../../cloud/tenancy/pg-store.js';
import { freshPgDatabase } from '../../../test/support/stack.js';

const CONCURRENCY = 32;
const ACCOUNTS = 4000;
const MEMBERSHIPS_PER_ACCOUNT = 5;
const DOMAINS = 200;
const WARMUP_MS = 1500;
/** Login path and limit alternate in short slices, so both see the same background load. */
const ROUNDS = 6;
const SLICE_MS = 1500;
const REDEEM_MS = 5000;
const SECRET = 'bench-identity-secret-of-the-run';
const MAIN = fileURLToPath(new URL('../../../cloud/tenancy/main.ts', import.meta.url));
const MIGRATIONS = fileURLToPath(new URL('../../../cloud/tenancy/migrations/', import.meta.url));

/** Latencies and elapsed time of one kind of call, accumulated over slices. */
class Sample {
  readonly latencies: number[] = [];
  elapsedMs = 0;

  get perSecond(): number {
    return this.latencies.length / (this.elapsedMs / 1000);
  }

  get p99Ms(): number {
    const sorted = [...this.latencies].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length * 0.99)] ?? NaN;
  }
}

/** Runs `call` from `CONCURRENCY` loops for `ms`; every call must resolve true, or the bench aborts. */
async function load(ms: number, call: (worker: number, i: number) => Promise<boolean>, into = new Sample()): Promise<Sample> {
  const deadline = performance.now() + ms;
  const started = performance.now();
  let sequence = into.latencies.length;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, worker) => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        if (!(await call(worker, sequence++))) throw new Error('a request failed; figures would be meaningless');
        into.latencies.push(performance.now() - t0);
      }
    }),
  );
  into.elapsedMs += performance.now() - started;
  return into;
}

/** CPU time (user + system) a process has used so far, in milliseconds (Linux /proc). */
function cpuMsOf(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return NaN;
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function main(): Promise<void> {
  const teardowns: (() => unknown)[] = [];
  try {
    const databaseUrl = await freshPgDatabase({ teardown: (fn) => teardowns.unshift(fn) });
    const pool = new pg.Pool({ connectionString: databaseUrl, max: CONCURRENCY });
    // The database is dropped WITH (FORCE) at the end; connections still closing may see that.
    pool.on('error', () => undefined);
    teardowns.unshift(() => pool.end());
    await runMigrations(pool, 'tenancy', MIGRATIONS);

    await pool.query(`INSERT INTO domains (name, display_name, is_public) SELECT 'bench-' || g, 'Bench ' || g, true FROM generate_series(1, ${DOMAINS}) g`);
    const accounts = (await pool.query<{ id: string }>(`SELECT gen_random_uuid()::text AS id FROM generate_series(1, ${ACCOUNTS})`)).rows.map((r) => r.id);
    await pool.query(
      `INSERT INTO memberships (account_id, domain_id, role, joined_via)
       SELECT a.id::uuid, d.id, 'member', 'local'
       FROM unnest($1::text[]) WITH ORDINALITY AS a(id, n)
       CROSS JOIN LATERAL (
         SELECT id FROM domains ORDER BY name OFFSET (a.n % ${DOMAINS - MEMBERSHIPS_PER_ACCOUNT}) LIMIT ${MEMBERSHIPS_PER_ACCOUNT}
       ) d`,
      [accounts],
    );
    // Made by bench-1's administrator: a code redeems only while its creator may still issue it.
    const creator = (
      await pool.query<{ account_id: string }>(
        `INSERT INTO memberships (account_id, domain_id, role, joined_via)
         SELECT gen_random_uuid(), id, 'business_admin', 'local' FROM domains WHERE name = 'bench-1' RETURNING account_id`,
      )
    ).rows[0]?.account_id;
    const codes = (
      await pool.query<{ code: string }>(
        `INSERT INTO invite_codes (domain_id, code, role, created_by, expires_at)
         SELECT (SELECT id FROM domains WHERE name = 'bench-1'), md5(random()::text || g), 'member', $1::uuid, now() + interval '1 day'
         FROM generate_series(1, 40000) g RETURNING code`,
        [creator],
      )
    ).rows.map((r) => r.code);
    await pool.query('ANALYZE');

    const port = await freePort();
    const server = spawn(process.execPath, ['--import', 'tsx', MAIN], {
      env: { ...process.env, DATABASE_URL: databaseUrl, INTERNAL_SIGNING_SECRET: SECRET, ADDR: `127.0.0.1:${port}`, LOG_LEVEL: 'warn', REDIS_URL: '' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const exited = new Promise((resolve) => server.once('exit', resolve));
    teardowns.unshift(async () => {
      server.kill('SIGTERM');
      await exited;
    });
    const http = new HttpPool(`http://127.0.0.1:${port}`, { connections: CONCURRENCY, pipelining: 1 });
    teardowns.unshift(() => http.close());
    for (let attempt = 0; ; attempt++) {
      try {
        const health = await http.request({ path: '/health', method: 'GET' });
        await health.body.dump();
        if (health.statusCode === 200) break;
      } catch {
        if (attempt > 300) throw new Error('tenancy did not start');
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    const emptySignature = sign('', SECRET);
    const pick = (_worker: number, i: number) => accounts[(i * 7919) % accounts.length] ?? '';
    const viaHttp = async (worker: number, i: number) => {
      const r = await http.request({ path: `/internal/memberships?accountId=${pick(worker, i)}`, method: 'GET', headers: { 'x-signature': emptySignature } });
      const body = (await r.body.json()) as unknown[];
      return r.statusCode === 200 && body.length === MEMBERSHIPS_PER_ACCOUNT;
    };
    const direct = async (worker: number, i: number) => {
      const r = await pool.query({ name: 'tenancy_memberships_of', text: MEMBERSHIPS_OF_SQL, values: [pick(worker, i)] });
      return r.rows.length === MEMBERSHIPS_PER_ACCOUNT;
    };

    await load(WARMUP_MS, direct);
    await load(WARMUP_MS, viaHttp);
    const limit = new Sample();
    const login = new Sample();
    let serverCpuMs = 0;
    for (let round = 0; round < ROUNDS; round++) {
      await load(SLICE_MS, direct, limit);
      const cpuBefore = cpuMsOf(server.pid);
      await load(SLICE_MS, viaHttp, login);
      serverCpuMs += cpuMsOf(server.pid) - cpuBefore;
    }

    let next = 0;
    const redeem = async () => {
      const code = codes[next++];
      if (code === undefined) throw new Error('ran out of invite codes');
      const claims = encodeClaims({ sub: crypto.randomUUID() });
      const r = await http.request({ path: `/invite-codes/${code}/redeem`, method: 'POST', headers: { 'x-gateway-claims': claims } });
      await r.body.dump();
      return r.statusCode === 201;
    };
    const redeemed = await load(REDEEM_MS, redeem);

    const fmt = (n: number, digits = 0) => n.toFixed(digits);
    console.log(`memberships per account: ${MEMBERSHIPS_PER_ACCOUNT} rows`);
    console.log(`concurrency: ${CONCURRENCY} callers`);
    console.log(`login path http GET /internal/memberships: ${fmt(login.perSecond)} req/s`);
    console.log(`login path http p99: ${fmt(login.p99Ms, 2)} ms`);
    console.log(`tenancy process cpu per login: ${fmt((serverCpuMs * 1000) / login.latencies.length)} us`);
    console.log(`direct pg query (limit): ${fmt(limit.perSecond)} req/s`);
    console.log(`direct pg query p99: ${fmt(limit.p99Ms, 2)} ms`);
    console.log(`redeem http POST /invite-codes/{code}/redeem: ${fmt(redeemed.perSecond)} req/s`);
    console.log(`redeem http p99: ${fmt(redeemed.p99Ms, 2)} ms`);
    console.log(`ratio: ${fmt(login.perSecond / limit.perSecond, 2)}`);
  } finally {
    for (const teardown of teardowns) await teardown();
  }
}

await main();
