/**
 * Telemetry ingest benchmark, on the local stack (bash tools/stack up):
 * - starts the service (cloud/telemetry/main.ts) as its own process on a fresh database, with topics,
 *   consumer group and channels of its own; stops it, drops the database and deletes the topics and
 *   group at the end, whether the run succeeded or not;
 * - 8 concurrent clients post signed batches of 500 readings; readings/s stored, p50/p99 batch latency;
 * - the limit: the same rows written into the same table with PostgreSQL COPY FROM STDIN, from 8
 *   connections, one COPY per 500-row batch (the same batching), as the store copies them: in binary
 *   format and in key order. Also, for comparison, the same batches in text format and batch order
 *   (the limit of earlier runs; about a tenth slower for PostgreSQL), and one bulk binary COPY per
 *   connection;
 * - the store path alone: the same batches through the service's PostgreSQL adapter
 *   (`PgReadingsStore.store`, the same transaction as ingest) from 8 connections, without HTTP, the
 *   signature, parsing, validation or Redis; it tells the service's own cost from the database's;
 * - prints the CPU seconds each side spent (service, its PostgreSQL backends, Redis from /proc; the
 *   load clients, this process), and how long the service's event-loop thread ran and how long it
 *   was ready to run with no core free (its schedstat), which explains the ratio on a small machine;
 * - prints `ratio:` (ingest readings/s over batched COPY rows/s) last.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { Agent, request } from 'undici';
import { validateReading } from '../../../shared/catalog/validate.js';
import { sign } from '../../../shared/hmac.js';
import { rowOf, type ReadingRow } from '../../../cloud/telemetry/domain/batch.js';
import { copyFrom, copyText } from '../../../cloud/telemetry/store/copy-in.js';
import { binaryCopyRows } from '../../../cloud/telemetry/store/copy-binary.js';
import { PgReadingsStore, rowsInKeyOrder } from '../../../cloud/telemetry/store/readings.js';
import { cpuSeconds, cpuTimesOfPid, runQueueOfPid } from './cpu.js';
import { benchKafkaNames, kafkaNamesEnv, removeKafkaNames, type BenchKafkaNames } from './kafka-names.js';
import { nearestRank } from '../report.js';

const CLIENTS = 8;
const BATCH = 500;
const WARMUP_BATCHES = 3;
const MEASURED_BATCHES = 30;
const SECRET = `bench-secret-${randomUUID()}`;
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

const env = {
  DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://lintel@127.0.0.1:55432/lintel',
  REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:56379',
  KAFKA_BROKERS: process.env.KAFKA_BROKERS ?? '127.0.0.1:59092',
};

interface Batch {
  body: string;
  signature: string;
  rows: ReadingRow[];
}

/** Client c's batch b: one building per client, 50 rooms, temperature and people counts. */
function makeBatch(client: number, batch: number, base: number): Batch {
  const readings = Array.from({ length: BATCH }, (_, i) => {
    const roomId = `room-${i % 50}`;
    const timestamp = base + batch * BATCH + i;
    return i % 2 === 0
      ? { type: 'temperature', buildingId: `bench-${client}`, roomId, timestamp, temperature: 20 + (i % 40) / 10, humidity: 40 + (i % 20), sensorId: `stat-${i % 50}` }
      : { type: 'peopleCount', buildingId: `bench-${client}`, roomId, timestamp, peopleCount: i % 30 };
  });
  const body = JSON.stringify({ batchId: `bench-${client}-${batch}-${base}`, readings });
  const rows = readings.map((r) => {
    const checked = validateReading(r);
    if (!checked.ok) throw new Error('bench reading is invalid');
    return rowOf({ reading: checked.reading, metric: checked.metric });
  });
  return { body, signature: sign(body, SECRET), rows };
}

function copyChunk(rows: readonly ReadingRow[]): Buffer {
  let text = '';
  for (const r of rows) {
    text += `${copyText(r.buildingId)}\t${copyText(r.roomId)}\t${copyText(r.metric)}\t${new Date(r.ts).toISOString()}\t${r.value}\t${copyText(r.payload)}\n`;
  }
  return Buffer.from(text);
}

/** The service as its own process, with topics, group and channels of its own (`suffix`). */
function spawnService(databaseUrl: string, suffix: string, kafkaNames: BenchKafkaNames): ChildProcess {
  // TELEMETRY_BENCH_CPU_PROF=<dir> writes a V8 CPU profile of the service there when it stops.
  const profile = process.env.TELEMETRY_BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.TELEMETRY_BENCH_CPU_PROF}`] : [];
  return spawn(process.execPath, [...profile, '--import', 'tsx', 'cloud/telemetry/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...env,
      DATABASE_URL: databaseUrl,
      PORT: '0',
      INGEST_SIGNING_SECRET: SECRET,
      LOG_LEVEL: 'info',
      ...kafkaNamesEnv(kafkaNames),
      RAW_CHANNEL: `bench:${suffix}:telemetry:raw`,
      FILTERED_CHANNEL_PREFIX: `bench:${suffix}:telemetry:filtered:`,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

/**
 * The port the service logs it listens on. It rejects if the service exits first or takes over 30 s;
 * the caller holds the child either way, and stops it.
 */
async function listeningPort(child: ChildProcess): Promise<number> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await new Promise<number>((resolve, reject) => {
      let buffered = '';
      timer = setTimeout(() => reject(new Error('the service did not start within 30 s')), 30_000);
      child.stdout!.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        const match = /"port":(\d+)[^\n]*telemetry listening/.exec(buffered);
        if (match) resolve(Number(match[1]));
      });
      child.once('exit', (code) => reject(new Error(`the service exited with ${code}`)));
    });
  } finally {
    clearTimeout(timer);
    child.stdout!.resume();
  }
}

async function post(agent: Agent, url: string, batch: Batch): Promise<number> {
  const started = performance.now();
  const res = await request(url, {
    method: 'POST',
    dispatcher: agent,
    headers: { 'content-type': 'application/json', 'x-signature': batch.signature },
    body: batch.body,
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`ingest answered ${res.statusCode}: ${text.slice(0, 200)}`);
  return performance.now() - started;
}

async function count(pool: pg.Pool): Promise<number> {
  return Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM readings')).rows[0]?.n ?? 0);
}

/**
 * The same rows by COPY from one connection per client: per 500-row batch, or in one bulk COPY. In
 * `binary` format the rows go as the store sends them (its encoder, key order); in `text` format, as
 * tab-separated text in batch order.
 */
async function copyPhase(pool: pg.Pool, perClient: Batch[][], options: { bulk: boolean; format: 'binary' | 'text' }): Promise<{ rows: number; seconds: number }> {
  await pool.query('TRUNCATE readings');
  const encode = (rows: readonly ReadingRow[]): Buffer[] => (options.format === 'binary' ? binaryCopyRows(rowsInKeyOrder(rows)) : [copyChunk(rows)]);
  const chunks = perClient.map((batches) => (options.bulk ? [encode(batches.flatMap((b) => b.rows))] : batches.map((b) => encode(b.rows))));
  const clients = await Promise.all(perClient.map(() => pool.connect()));
  const statement = `COPY readings (building_id, room_id, metric, ts, value, payload) FROM STDIN${options.format === 'binary' ? ' (FORMAT binary)' : ''}`;
  const started = performance.now();
  const copied = await Promise.all(
    clients.map(async (client, c) => {
      let rows = 0;
      for (const chunk of chunks[c]!) rows += await copyFrom(client, statement, chunk);
      return rows;
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  for (const client of clients) client.release();
  const rows = copied.reduce((a, b) => a + b, 0);
  if (rows !== (await count(pool))) throw new Error('COPY row count does not match the table');
  return { rows, seconds };
}

/**
 * The measured batches through the service's storage adapter alone, each under a new batch id, into an
 * emptied table. The metrics with bounds are named as ingest names them, so the thresholds are read.
 */
async function storePhase(pool: pg.Pool, perClient: Batch[][]): Promise<{ rows: number; seconds: number }> {
  await pool.query('TRUNCATE readings');
  const store = new PgReadingsStore(pool);
  const started = performance.now();
  const stored = await Promise.all(
    perClient.map(async (batches, c) => {
      let rows = 0;
      for (const [b, batch] of batches.entries()) {
        const outcome = await store.store({ keyId: 'bench-store', batchId: `store-${c}-${b}`, rows: batch.rows, boundedMetrics: ['peopleCount', 'temperature'], alertsFor: () => [] });
        if (outcome.kind !== 'stored') throw new Error(`the store path answered ${outcome.kind}`);
        rows += outcome.inserted;
      }
      return rows;
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const rows = stored.reduce((a, b) => a + b, 0);
  if (rows !== (await count(pool))) throw new Error('the store path row count does not match the table');
  return { rows, seconds };
}

async function main(): Promise<void> {
  const dbName = `bench_telemetry_${process.pid}_${randomUUID().replace(/-/g, '').slice(0, 8)}`;
  const admin = new pg.Client({ connectionString: env.DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const url = new URL(env.DATABASE_URL);
  url.pathname = `/${dbName}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: CLIENTS + 2 });
  // DROP DATABASE … WITH (FORCE) at the end ends idle connections; that is expected.
  pool.on('error', () => undefined);
  const suffix = randomUUID().slice(0, 8);
  const kafkaNames = benchKafkaNames(suffix);
  let child: ChildProcess | undefined;
  try {
    child = spawnService(url.toString(), suffix, kafkaNames);
    const ingestUrl = `http://127.0.0.1:${await listeningPort(child)}/ingest`;
    const agent = new Agent({ connections: CLIENTS });
    const base = Date.now() - 3_600_000;
    const warmup = Array.from({ length: CLIENTS }, (_, c) => Array.from({ length: WARMUP_BATCHES }, (_, b) => makeBatch(c, b, base - 600_000)));
    const measured = Array.from({ length: CLIENTS }, (_, c) => Array.from({ length: MEASURED_BATCHES }, (_, b) => makeBatch(c, b, base)));

    await Promise.all(warmup.map(async (batches) => {
      for (const batch of batches) await post(agent, ingestUrl, batch);
    }));
    const before = await count(pool);
    const latencies: number[] = [];
    const servicePid = child.pid ?? -1;
    const cpu = () => ({
      postgres: cpuSeconds((cmd) => cmd.startsWith(`postgres: `) && cmd.includes(` ${dbName} `)),
      redis: cpuSeconds((cmd) => cmd.startsWith('redis-server')),
    });
    const cpuBefore = cpu();
    const serviceTimesBefore = cpuTimesOfPid(servicePid);
    const serviceQueueBefore = runQueueOfPid(servicePid);
    const clientCpuBefore = process.cpuUsage();
    const started = performance.now();
    await Promise.all(measured.map(async (batches) => {
      for (const batch of batches) latencies.push(await post(agent, ingestUrl, batch));
    }));
    const seconds = (performance.now() - started) / 1000;
    const clientCpu = process.cpuUsage(clientCpuBefore);
    const cpuAfter = cpu();
    const serviceTimesAfter = cpuTimesOfPid(servicePid);
    const serviceQueueAfter = runQueueOfPid(servicePid);
    const stored = (await count(pool)) - before;
    if (stored !== CLIENTS * MEASURED_BATCHES * BATCH) throw new Error(`expected ${CLIENTS * MEASURED_BATCHES * BATCH} stored readings, found ${stored}`);
    await agent.close();
    latencies.sort((a, b) => a - b);
    const ingestRate = stored / seconds;

    const storeCpuBefore = cpu().postgres;
    const direct = await storePhase(pool, measured);
    const storeCpu = cpu().postgres - storeCpuBefore;
    const copyCpuBefore = cpu().postgres;
    const batched = await copyPhase(pool, measured, { bulk: false, format: 'binary' });
    const copyCpu = cpu().postgres - copyCpuBefore;
    const textCpuBefore = cpu().postgres;
    const batchedText = await copyPhase(pool, measured, { bulk: false, format: 'text' });
    const textCpu = cpu().postgres - textCpuBefore;
    const bulk = await copyPhase(pool, measured, { bulk: true, format: 'binary' });
    const copyRate = batched.rows / batched.seconds;

    console.log(`clients: ${CLIENTS} connections`);
    console.log(`batch_size: ${BATCH} readings`);
    console.log(`readings_stored: ${stored} readings`);
    console.log(`ingest_throughput: ${ingestRate.toFixed(0)} readings/s`);
    console.log(`batch_latency_p50: ${nearestRank(latencies, 0.5).toFixed(1)} ms`);
    console.log(`batch_latency_p99: ${nearestRank(latencies, 0.99).toFixed(1)} ms`);
    const serviceUser = serviceTimesAfter.user - serviceTimesBefore.user;
    const serviceSystem = serviceTimesAfter.system - serviceTimesBefore.system;
    console.log(`ingest_cpu_service: ${(serviceUser + serviceSystem).toFixed(2)} s`);
    console.log(`ingest_cpu_service_user: ${serviceUser.toFixed(2)} s`);
    console.log(`ingest_cpu_service_system: ${serviceSystem.toFixed(2)} s`);
    console.log(`ingest_cpu_postgres: ${(cpuAfter.postgres - cpuBefore.postgres).toFixed(2)} s`);
    console.log(`ingest_cpu_redis: ${(cpuAfter.redis - cpuBefore.redis).toFixed(2)} s`);
    console.log(`ingest_cpu_load_clients: ${((clientCpu.user + clientCpu.system) / 1e6).toFixed(2)} s`);
    console.log(`ingest_wall: ${seconds.toFixed(2)} s`);
    // The service's event loop is one thread: how long it ran, and how long it was ready with no core free.
    console.log(`ingest_service_thread_on_cpu: ${(serviceQueueAfter.onCpu - serviceQueueBefore.onCpu).toFixed(2)} s`);
    console.log(`ingest_service_thread_waiting_for_cpu: ${(serviceQueueAfter.waiting - serviceQueueBefore.waiting).toFixed(2)} s`);
    console.log(`store_path_throughput: ${(direct.rows / direct.seconds).toFixed(0)} rows/s`);
    console.log(`store_path_cpu_postgres: ${storeCpu.toFixed(2)} s`);
    console.log(`copy_batched_text_throughput: ${(batchedText.rows / batchedText.seconds).toFixed(0)} rows/s`);
    console.log(`copy_batched_text_cpu_postgres: ${textCpu.toFixed(2)} s`);
    console.log(`ratio_vs_text_copy: ${(ingestRate / (batchedText.rows / batchedText.seconds)).toFixed(2)} x`);
    console.log(`copy_batched_throughput: ${copyRate.toFixed(0)} rows/s`);
    console.log(`copy_batched_cpu_postgres: ${copyCpu.toFixed(2)} s`);
    console.log(`copy_bulk_throughput: ${(bulk.rows / bulk.seconds).toFixed(0)} rows/s`);
    console.log(`ratio_vs_bulk_copy: ${(ingestRate / (bulk.rows / bulk.seconds)).toFixed(2)} x`);
    console.log(`load_average_1m: ${loadavg()[0]!.toFixed(1)} runnable`);
    console.log(`ratio: ${(ingestRate / copyRate).toFixed(2)}`);
  } finally {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await removeKafkaNames(env.KAFKA_BROKERS.split(','), kafkaNames);
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
  }
}

main().catch((err) => {
  console.error(`bench failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
