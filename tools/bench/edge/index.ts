/**
 * Edge benchmark: the tick time of the poller against 100 SNMP APs of 50 stations each, against the limit
 * of Net-SNMP's own C client (`snmpbulkwalk`, 100 processes at once, started by one shell) walking the
 * same tables; the tracker's time for 10k stations (tracker.ts, in its own bundled process; p50 and p95
 * over steady-state polls); the poller's peak RSS. `npm run bench:edge -- --tracker-only` prints the
 * tracker figures alone.
 *
 * The APs: one real `snmpd` listening on 100 loopback UDP ports, each port an AP. Every port serves the
 * same 50-station wlsxWlanStationTable (aruba-aos dialect; signal is an SNR column), so each AP costs
 * exactly what a distinct table of 50 stations would; 100 snmpd processes would only add 100 × ~13 MB
 * and scheduler noise on a 2-core machine. The table is served natively from snmpd.conf `override`
 * lines, as an AP's agent serves its tables from memory; a second round serves it through the
 * pass_persist script the tests use (a Python process answers every GETNEXT), where snmpd is the
 * bottleneck for both clients. Both clients walk the signal column with max-repetitions 25, and every
 * walk is checked to have read all 50 rows.
 *
 * The poller runs in its own process, bundled and started with plain `node` as the gateway ships, so
 * neither the TypeScript loader nor this script is in its time or RSS, and with the environment of the
 * shipped systemd unit (a bounded V8 heap): the headline tick, ratio and RSS are those of the shipped
 * configuration, and so are the tracker's figures. One more run with V8's default heap is printed for
 * comparison (`*_default_heap`). Ticks and snmpbulkwalk batches alternate, and medians are reported, so
 * both see the same (shared, noisy) machine.
 *
 * Last, the whole collector as it ships (daemon-rss.ts): the single executable `run` against the same
 * APs, with the unit's environment, its peak RSS split into file-backed pages (the executable's own) and
 * anonymous memory. Every tick of it must poll every AP and have its batch accepted, or the bench fails.
 *
 * Prints `label: value unit` lines, `ratio: <poller tick / snmpbulkwalk>` last.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { BUILTIN_DIALECT_DIR } from '../../../edge/src/poll/dialects.js';
import { createRandom } from '../../../edge/src/simulate/prng.js';
import { startSnmpd, type RunningSnmpd } from '../../../test/support/peers/snmpd.js';
import { buildExecutable, measureDaemon } from './daemon-rss.js';
import { runnerEnv, shippedEnvironment } from './shipped-runtime.js';
import type { TrackerFigures } from './tracker.js';

const APS = 100;
const STATIONS = 50;
const MAX_REPETITIONS = 25;
const ROUNDS = 9;
const DAEMON_TICKS = 15;
const TIMEOUT_MS = 5000;
const COLUMN = '1.3.6.1.4.1.14823.2.2.1.5.2.2.1.1.14';

/** 50 stations: index = station MAC, value = SNR. */
function stationTable(): Array<{ oid: string; snr: number }> {
  const random = createRandom(2024);
  const rows = Array.from({ length: STATIONS }, () => {
    const mac = [2, ...Array.from({ length: 5 }, () => random.int(0, 255))];
    return { mac, oid: `${COLUMN}.${mac.join('.')}`, snr: random.int(10, 50) };
  });
  rows.sort((a, b) => {
    for (let i = 0; i < 6; i++) if (a.mac[i] !== b.mac[i]) return (a.mac[i] ?? 0) - (b.mac[i] ?? 0);
    return 0;
  });
  return rows.map(({ oid, snr }) => ({ oid, snr }));
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};
const fmt = (ms: number) => ms.toFixed(1);

/** 100 concurrent snmpbulkwalk processes, started by one shell; returns the wall time and checks the output. */
async function walkAllWithSnmpbulkwalk(snmpd: RunningSnmpd, outDir: string): Promise<number> {
  const script = `for p in ${snmpd.ports.join(' ')}; do snmpbulkwalk -v2c -c public -On -Cr${MAX_REPETITIONS} -t 5 -r 1 127.0.0.1:$p ${COLUMN} > ${outDir}/$p.out 2> ${outDir}/$p.err & done; wait`;
  const started = performance.now();
  await new Promise<void>((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', script], {
      stdio: 'ignore',
      env: { ...process.env, MIBS: '', SNMP_PERSISTENT_DIR: join(outDir, 'persist'), SNMPCONFPATH: outDir },
    });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`snmpbulkwalk batch exited ${code}`))));
  });
  const elapsed = performance.now() - started;
  for (const port of snmpd.ports) {
    const lines = readFileSync(join(outDir, `${port}.out`), 'utf8').trim().split('\n').filter(Boolean);
    if (lines.length !== STATIONS) {
      const errors = readFileSync(join(outDir, `${port}.err`), 'utf8').trim();
      throw new Error(`snmpbulkwalk on port ${port} read ${lines.length} rows: ${errors}`);
    }
  }
  return elapsed;
}

/**
 * Bundles the poll runner the way the gateway ships (one file, plain node), so neither the TypeScript
 * loader nor this benchmark's own bookkeeping is in its time or its RSS.
 */
async function bundleRunner(dir: string, name: 'poll-runner' | 'tracker-runner'): Promise<string> {
  const outfile = join(dir, `${name}.mjs`);
  await build({
    entryPoints: [fileURLToPath(new URL(`./${name}.ts`, import.meta.url))],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile,
    // ssh2's optional native speed-ups; it falls back to JavaScript without them
    external: ['cpu-features', '*.node'],
    // the CommonJS dependencies expect require, __dirname and __filename
    banner: {
      js: [
        "import { createRequire as __createRequire } from 'node:module';",
        "import { fileURLToPath as __fileURLToPath } from 'node:url';",
        "import { dirname as __dirnameOf } from 'node:path';",
        'const require = __createRequire(import.meta.url);',
        'const __filename = __fileURLToPath(import.meta.url);',
        'const __dirname = __dirnameOf(__filename);',
      ].join('\n'),
    },
    logLevel: 'error',
  });
  return outfile;
}

/** The runner process: one `tick` → one JSON line. */
class Runner {
  private readonly pending: Array<{ resolve: (line: string) => void; reject: (error: Error) => void }> = [];
  private exited: Error | undefined;
  constructor(private readonly child: ChildProcessByStdio<Writable, Readable, null>) {
    createInterface({ input: child.stdout }).on('line', (line) => this.pending.shift()?.resolve(line));
    child.once('exit', (code) => {
      this.exited = new Error(`the poll runner exited (${code})`);
      for (const waiter of this.pending.splice(0)) waiter.reject(this.exited);
    });
  }
  ask(command: string): Promise<string> {
    return new Promise((resolve, reject) => {
      if (this.exited) return reject(this.exited);
      this.pending.push({ resolve, reject });
      this.child.stdin.write(`${command}\n`);
    });
  }
  async tick(): Promise<number> {
    const answer = JSON.parse(await this.ask('tick')) as { ms: number; bad: number; sample?: unknown };
    if (answer.bad > 0) throw new Error(`${answer.bad} APs did not give ${STATIONS} stations: ${JSON.stringify(answer.sample).slice(0, 300)}`);
    return answer.ms;
  }
  async exit(): Promise<{ maxRssMb: number; heapLimitMb: number }> {
    const answer = JSON.parse(await this.ask('exit')) as { maxRssMb: number; heapLimitMb: number };
    this.child.stdin.end();
    return answer;
  }
}

/** A poll runner, started with the shipped environment (undefined: V8's defaults). */
function startRunner(snmpd: RunningSnmpd, runnerFile: string, shipped: Record<string, string> | undefined): { runner: Runner; kill: () => void } {
  const options = { ports: snmpd.ports, stations: STATIONS, maxRepetitions: MAX_REPETITIONS, dialectDir: BUILTIN_DIALECT_DIR, timeoutMs: TIMEOUT_MS };
  const child = spawn(process.execPath, [runnerFile, JSON.stringify(options)], { stdio: ['pipe', 'pipe', 'inherit'], env: runnerEnv(shipped) });
  return { runner: new Runner(child), kill: () => child.kill() };
}

interface PollerFigures {
  poller: number;
  walk: number;
  rssMb: number;
  heapLimitMb: number;
}

/** Poller ticks interleaved with snmpbulkwalk batches, medians of each; then the runner's peak RSS. */
async function measure(snmpd: RunningSnmpd, rounds: number, outDir: string, runnerFile: string, shipped: Record<string, string> | undefined): Promise<PollerFigures> {
  const { runner, kill } = startRunner(snmpd, runnerFile, shipped);
  try {
    // warm-up: JIT, sockets, snmpd, the shell and the snmp tools in the page cache
    await runner.tick();
    await walkAllWithSnmpbulkwalk(snmpd, outDir);
    const pollerTimes: number[] = [];
    const walkTimes: number[] = [];
    for (let i = 0; i < rounds; i++) {
      // interleaved, so both see the same machine
      pollerTimes.push(await runner.tick());
      walkTimes.push(await walkAllWithSnmpbulkwalk(snmpd, outDir));
    }
    const { maxRssMb, heapLimitMb } = await runner.exit();
    return { poller: median(pollerTimes), walk: median(walkTimes), rssMb: maxRssMb, heapLimitMb };
  } finally {
    kill();
  }
}

/** The same poller with V8's default heap, for comparison: ticks only. */
async function measureDefaultHeap(snmpd: RunningSnmpd, runnerFile: string): Promise<{ poller: number; rssMb: number }> {
  const { runner, kill } = startRunner(snmpd, runnerFile, undefined);
  try {
    await runner.tick();
    const times: number[] = [];
    for (let i = 0; i < ROUNDS; i++) times.push(await runner.tick());
    return { poller: median(times), rssMb: (await runner.exit()).maxRssMb };
  } finally {
    kill();
  }
}

function printTracker(tracker: TrackerFigures): void {
  console.log(`tracker_polls_measured: ${tracker.polls} count`);
  console.log(`tracker_observe_10k_p50: ${fmt(tracker.observe.p50)} ms`);
  console.log(`tracker_observe_10k_p95: ${fmt(tracker.observe.p95)} ms`);
  console.log(`tracker_apply_10k_p50: ${fmt(tracker.apply.p50)} ms`);
  console.log(`tracker_apply_10k_p95: ${fmt(tracker.apply.p95)} ms`);
  console.log(`tracker_10k_p50: ${fmt(tracker.tick.p50)} ms`);
  console.log(`tracker_10k_p95: ${fmt(tracker.tick.p95)} ms`);
  console.log(`tracker_10k_cpu_p50: ${fmt(tracker.tickCpu.p50)} ms`);
  console.log(`tracker_10k_cpu_p95: ${fmt(tracker.tickCpu.p95)} ms`);
}

/** The tracker benchmark in its own process (see tracker-runner.ts), started as the collector ships. */
async function runTracker(trackerFile: string, shipped: Record<string, string> | undefined): Promise<TrackerFigures> {
  const child = spawn(process.execPath, [trackerFile], { stdio: ['ignore', 'pipe', 'inherit'], env: runnerEnv(shipped) });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`the tracker runner exited ${code}`);
  return JSON.parse(out) as TrackerFigures;
}

/** `--tracker-only`: the tracker figures alone, in seconds rather than a minute. */
async function trackerOnly(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'lintel-bench-edge-'));
  try {
    printTracker(await runTracker(await bundleRunner(work, 'tracker-runner'), shippedEnvironment()));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  if (process.argv.includes('--tracker-only')) return trackerOnly();
  const work = mkdtempSync(join(tmpdir(), 'lintel-bench-edge-'));
  let native: RunningSnmpd | undefined;
  let passPersist: RunningSnmpd | undefined;
  // From here on, whatever fails, the work directory goes (the bundles, the recording, the daemon's state).
  try {
    const table = stationTable();
    const recordingFile = join(work, 'bench-aruba.snmpwalk');
    writeFileSync(recordingFile, `${table.map((row) => `.${row.oid} = INTEGER: ${row.snr}`).join('\n')}\n`);

    const runnerFile = await bundleRunner(work, 'poll-runner');
    const trackerFile = await bundleRunner(work, 'tracker-runner');
    const shipped = shippedEnvironment();
    await buildExecutable();
    native = await startSnmpd({ ports: APS, extraConfig: table.map((row) => `override .${row.oid} integer ${row.snr}`) });
    const nativeFigures = await measure(native, ROUNDS, work, runnerFile, shipped);
    const defaultHeap = await measureDefaultHeap(native, runnerFile);
    const daemon = await measureDaemon(native.ports, work, shipped, DAEMON_TICKS);
    await native.stop();
    native = undefined;

    passPersist = await startSnmpd({ ports: APS, recordings: [recordingFile] });
    const passFigures = await measure(passPersist, 5, work, runnerFile, shipped);
    await passPersist.stop();
    passPersist = undefined;

    const tracker = await runTracker(trackerFile, shipped);

    console.log(`aps: ${APS} count`);
    console.log(`stations_per_ap: ${STATIONS} count`);
    console.log(`poller_tick_pass_persist: ${fmt(passFigures.poller)} ms`);
    console.log(`snmpbulkwalk_pass_persist: ${fmt(passFigures.walk)} ms`);
    printTracker(tracker);
    console.log(`poller_tick_default_heap: ${fmt(defaultHeap.poller)} ms`);
    console.log(`poller_rss_peak_default_heap: ${defaultHeap.rssMb.toFixed(1)} MB`);
    console.log(`daemon_ticks: ${daemon.ticks} count`);
    console.log(`daemon_batches_posted: ${daemon.batchesAccepted} count`);
    console.log(`daemon_ap_polls_failed: ${daemon.failedPolls} count`);
    console.log(`daemon_rss_file_backed: ${daemon.rssFileMb.toFixed(1)} MB`);
    console.log(`daemon_rss_anonymous: ${daemon.rssAnonMb.toFixed(1)} MB`);
    console.log(`shipped_heap_limit: ${nativeFigures.heapLimitMb.toFixed(0)} MB`);
    console.log(`poller_rss_peak: ${nativeFigures.rssMb.toFixed(1)} MB`);
    console.log(`daemon_rss_peak: ${daemon.rssPeakMb.toFixed(1)} MB`);
    console.log(`poller_tick: ${fmt(nativeFigures.poller)} ms`);
    console.log(`snmpbulkwalk: ${fmt(nativeFigures.walk)} ms`);
    console.log(`ratio: ${(nativeFigures.poller / nativeFigures.walk).toFixed(2)}`);
  } finally {
    await native?.stop();
    await passPersist?.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
