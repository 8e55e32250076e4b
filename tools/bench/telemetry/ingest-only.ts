/**
 * Diagnostic, not the benchmark: the service's CPU per reading for ingest alone, with a chosen number of
 * clients and batches (INGEST_ONLY_CLIENTS, INGEST_ONLY_BATCHES), so a change's cost shows without
 * the COPY phases. Prints the service's user and system CPU seconds per 120k readings. Like the
 * benchmark, it removes its database, topics and consumer group at the end.
 */
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { Agent, request } from 'undici';
import { sign } from '../../../shared/hmac.js';
import { cpuTimesOfPid } from './cpu.js';
import { benchKafkaNames, kafkaNamesEnv, removeKafkaNames } from './kafka-names.js';

const CLIENTS = Number(process.env.INGEST_ONLY_CLIENTS ?? 2);
const BATCHES = Number(process.env.INGEST_ONLY_BATCHES ?? 60);
const SECRET = `bench-secret-${randomUUID()}`;
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://lintel@127.0.0.1:55432/lintel';
const KAFKA_BROKERS = process.env.KAFKA_BROKERS ?? '127.0.0.1:59092';

function makeBody(client: number, batch: number, base: number): { body: string; signature: string } {
  const readings = Array.from({ length: 500 }, (_, i) => {
    const roomId = `room-${i % 50}`;
    const timestamp = base + batch * 500 + i;
    return i % 2 === 0
      ? { type: 'temperature', buildingId: `bench-${client}`, roomId, timestamp, temperature: 20 + (i % 40) / 10, humidity: 40 + (i % 20), sensorId: `stat-${i % 50}` }
      : { type: 'peopleCount', buildingId: `bench-${client}`, roomId, timestamp, peopleCount: i % 30 };
  });
  const body = JSON.stringify({ batchId: `bench-${client}-${batch}-${base}`, readings });
  return { body, signature: sign(body, SECRET) };
}

async function main(): Promise<void> {
  const dbName = `bench_ingest_only_${process.pid}`;
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const url = new URL(DATABASE_URL);
  url.pathname = `/${dbName}`;
  const suffix = randomUUID().slice(0, 8);
  const kafkaNames = benchKafkaNames(suffix);
  const profile = process.env.TELEMETRY_BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.TELEMETRY_BENCH_CPU_PROF}`] : [];
  // INGEST_ONLY_PERF=<file>: `perf record` of the service's CPU (not wall) time during the measured phase.
  const perfFile = process.env.INGEST_ONLY_PERF;
  if (perfFile) profile.push('--perf-basic-prof');
  // INGEST_ONLY_NODE_FLAGS: more node/V8 flags for the service (e.g. --trace-deopt), to look into it.
  if (process.env.INGEST_ONLY_NODE_FLAGS) profile.push(...process.env.INGEST_ONLY_NODE_FLAGS.split(' '));
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', 'cloud/telemetry/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: url.toString(), PORT: '0', INGEST_SIGNING_SECRET: SECRET, KAFKA_BROKERS, ...kafkaNamesEnv(kafkaNames), RAW_CHANNEL: `bench:${suffix}:raw`, FILTERED_CHANNEL_PREFIX: `bench:${suffix}:filtered:` },
    stdio: ['ignore', 'pipe', process.env.INGEST_ONLY_NODE_FLAGS ? 'ignore' : 'inherit'],
  });
  try {
    if (process.env.INGEST_ONLY_LOG) child.stdout!.pipe(createWriteStream(process.env.INGEST_ONLY_LOG));
  const port = await new Promise<number>((resolve) => {
      let buffered = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        const match = /"port":(\d+)[^\n]*telemetry listening/.exec(buffered);
        if (match) resolve(Number(match[1]));
      });
    });
    const agent = new Agent({ connections: CLIENTS });
    const base = Date.now() - 3_600_000;
    const post = async (b: { body: string; signature: string }) => {
      const res = await request(`http://127.0.0.1:${port}/ingest`, { method: 'POST', dispatcher: agent, headers: { 'content-type': 'application/json', 'x-signature': b.signature }, body: b.body });
      const text = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${text}`);
    };
    const warm = Array.from({ length: CLIENTS }, (_, c) => Array.from({ length: 6 }, (_, b) => makeBody(c, b, base - 600_000)));
    const batches = Array.from({ length: CLIENTS }, (_, c) => Array.from({ length: BATCHES }, (_, b) => makeBody(c, b, base)));
    await Promise.all(warm.map(async (list) => { for (const b of list) await post(b); }));
    const perf = perfFile ? spawn('perf', ['record', '-e', 'cpu-clock', '-F', '4000', '-g', '-p', String(child.pid), '-o', perfFile], { stdio: 'ignore' }) : undefined;
    if (perf) await new Promise((resolve) => setTimeout(resolve, 500));
    const before = cpuTimesOfPid(child.pid!);
    const started = performance.now();
    await Promise.all(batches.map(async (list) => { for (const b of list) await post(b); }));
    const seconds = (performance.now() - started) / 1000;
    const after = cpuTimesOfPid(child.pid!);
    if (perf) {
      perf.kill('SIGINT');
      await new Promise((resolve) => perf.once('exit', resolve));
    }
    const readings = CLIENTS * BATCHES * 500;
    const per = 120_000 / readings;
    console.log(`readings/s ${(readings / seconds).toFixed(0)}  service per 120k: user ${((after.user - before.user) * per).toFixed(2)} s, system ${((after.system - before.system) * per).toFixed(2)} s`);
    await agent.close();
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    await removeKafkaNames(KAFKA_BROKERS.split(','), kafkaNames);
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
