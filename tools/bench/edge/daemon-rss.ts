/**
 * The whole collector as it ships: `dist/lintel-edge run` (the single executable, built when stale) with
 * the systemd unit's environment (NODE_OPTIONS, MALLOC_ARENA_MAX), polling the benchmark's APs each second with the tracker, the SQLite
 * zone store and the ledger in the loop, and every tick's batch signed and posted to an ingest on
 * loopback that answers as telemetry does (200 `{accepted}`), through the shipped poster. Its peak RSS
 * (VmHWM) is read from /proc after a number of ticks, each of which must have polled every AP and had
 * its batch accepted (or the measurement fails), with the share that is file-backed: pages of the
 * 100 MB executable itself (Node and the bundle), clean and reclaimable, as opposed to anonymous memory
 * (the heap, SQLite, buffers).
 */
import { execFile, spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { runnerEnv } from './shipped-runtime.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const EXECUTABLE = join(REPO, 'dist/lintel-edge');

export interface DaemonMemory {
  ticks: number;
  /** Batches the loopback ingest received and accepted. */
  batchesAccepted: number;
  /** AP polls that failed or timed out over the run (each AP, each tick). */
  failedPolls: number;
  rssPeakMb: number;
  /** At the end: file-backed and anonymous resident memory. */
  rssFileMb: number;
  rssAnonMb: number;
}

const kb = (status: string, field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? Number.NaN);

/** Builds the executable when an input changed since its last build (seconds when up to date). */
export async function buildExecutable(): Promise<void> {
  await promisify(execFile)('bash', [join(REPO, 'tools/build-edge'), '--if-stale'], { cwd: REPO, timeout: 180_000 });
}

/** Runs the executable against `ports` (aruba-aos APs on 127.0.0.1) for `ticks` ticks. */
export async function measureDaemon(ports: readonly number[], work: string, shipped: Record<string, string>, ticks: number): Promise<DaemonMemory> {
  const dir = join(work, 'daemon');
  mkdirSync(join(dir, 'cache'), { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, 'community'), 'public\n', { mode: 0o600 });
  writeFileSync(join(dir, 'ingest.key'), `${INGEST_SECRET}\n`, { mode: 0o600 });
  const ingest = await startIngest();
  const aps = ports.map(
    (port, i) => `  - { name: ap-${i}, zone: zone-${i % 10}, dialect: aruba-aos, transport: snmp, host: 127.0.0.1, snmp: { version: 2c, port: ${port}, communityFile: community } }`,
  );
  const zones = Array.from({ length: 10 }, (_, z) => `  zone-${z}: { devicesPerPerson: 1.5 }`);
  writeFileSync(
    join(dir, 'config.yaml'),
    [
      'buildingId: bench',
      'pollIntervalS: 1',
      'requestTimeoutS: 1',
      `stateDir: ${join(dir, 'state')}`,
      'logLevel: info',
      `ingest: { url: "${ingest.url}", secretFile: ingest.key, keyId: gw-bench, timeoutS: 1 }`,
      'zones:',
      ...zones,
      'accessPoints:',
      ...aps,
      '',
    ].join('\n'),
  );

  const env = { ...runnerEnv(shipped), CACHE_DIRECTORY: join(dir, 'cache') };
  const child = spawn(EXECUTABLE, ['run', '--config', join(dir, 'config.yaml')], { cwd: dir, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  try {
    let seen = 0;
    let failed = 0;
    const undelivered: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the collector logged ${seen} ticks in ${ticks * 5} s`)), ticks * 5000);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the collector exited (${code}) after ${seen} ticks`));
      });
      createInterface({ input: child.stdout }).on('line', (line) => {
        const entry = JSON.parse(line) as { msg?: string; apsDown?: number; delivery?: string };
        if (entry.msg !== 'tick') return;
        seen++;
        failed += entry.apsDown ?? 0;
        // A tick logs after its batch's post has been answered, so every tick seen can be checked.
        if (entry.delivery !== 'accepted') undelivered.push(`tick ${seen}: ${entry.delivery ?? 'no delivery'}`);
        if (seen >= ticks) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
    if (ingest.unexpected.length > 0) throw new Error(`the loopback ingest got requests it does not serve: ${ingest.unexpected.slice(0, 3).join(', ')}`);
    // The figures stand for the collector at work: every AP answered and every tick's batch was posted.
    if (failed > 0) throw new Error(`${failed} AP polls failed over ${seen} ticks; the RSS would not be that of a full poll`);
    if (undelivered.length > 0) throw new Error(`${undelivered.length} of ${seen} ticks' batches were not accepted (${undelivered.slice(0, 3).join(', ')})`);
    if (ingest.accepted < seen) throw new Error(`the loopback ingest accepted ${ingest.accepted} batches in ${seen} ticks`);
    return { ticks: seen, batchesAccepted: ingest.accepted, failedPolls: failed, rssPeakMb: kb(status, 'VmHWM') / 1024, rssFileMb: kb(status, 'RssFile') / 1024, rssAnonMb: kb(status, 'RssAnon') / 1024 };
  } finally {
    child.kill('SIGTERM');
    await exited;
    await ingest.close();
  }
}

const INGEST_SECRET = 'bench-edge-ingest-key';

/**
 * An ingest on loopback for the collector's batches: POST /ingest with a signature made with the
 * benchmark's key over the exact body, answered 200 `{accepted}` with a Date, as telemetry answers.
 * Anything else is recorded as unexpected and answered 404.
 */
async function startIngest(): Promise<{ url: string; accepted: number; unexpected: string[]; close(): Promise<void> }> {
  const state = { accepted: 0, unexpected: [] as string[] };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const signed = createHmac('sha256', INGEST_SECRET).update(body).digest('hex') === req.headers['x-signature'];
      if (req.method !== 'POST' || req.url !== '/ingest' || !signed) {
        state.unexpected.push(`${req.method} ${req.url}${signed ? '' : ' (bad signature)'}`);
        res.writeHead(404).end();
        return;
      }
      const readings = (JSON.parse(body.toString('utf8')) as { readings: unknown[] }).readings.length;
      state.accepted++;
      res.writeHead(200, { 'content-type': 'application/json', date: new Date().toUTCString() }).end(JSON.stringify({ accepted: readings }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/ingest`,
    get accepted() {
      return state.accepted;
    },
    unexpected: state.unexpected,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
