/**
 * `lintel-edge simulate`: a simulated building (real SNMP agents and SSH servers on loopback, devices
 * walking between zones, APs rebooting) and the real collector polling it, with a live table of zone
 * counts against the ground truth. Posts to `--ingest` when given; otherwise batches stay in the ledger.
 * A ledger of batches that were posted is kept after the run, even without `--state-dir` (SECURITY.md §4:
 * every batch body that leaves is in the ledger).
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { createLogger, silentLogger } from '../../../shared/logger.js';
import type { DaemonConfig, TickReport } from '../daemon.js';
import { createPoller, loadDialects } from '../poll/index.js';
import type { AccessPoint, Poller } from '../poll/types.js';
import { looksLikeIdentifier } from '../report/identifiers.js';
import { peopleFromDevices } from '../report/readings.js';
import { LIVELY_MOTION, REALISTIC_MOTION, startSimulatedBuilding, type MotionModel } from '../simulate/index.js';
import type { SimulatedBuilding, SimulationOptions } from '../simulate/types.js';
import { createLiveRegion, renderLiveTable } from '../ui/table.js';
import { shellWord } from '../ui/shell-word.js';
import { loadOrCreateDeviceKey } from '../zones/device-key.js';
import { DEFAULT_TRACKER_CONFIG } from '../zones/types.js';
import type { CommandIo } from './common.js';
import { openGateway, statePaths } from './gateway.js';

export interface SimulateOptions {
  accessPoints?: number;
  devices?: number;
  zones?: number;
  seed?: number;
  rebootRate?: number;
  dialects?: string[];
  intervalMs: number;
  /**
   * How long the polls of a tick may take; default 0.8 × intervalMs (at least 50 ms), so that a tick
   * fits its interval. Longer, a slow AP holds its tick back rather than counting as silent (its devices
   * frozen): what a test on a loaded machine needs, whose ticks still come every intervalMs.
   */
  requestTimeoutMs?: number;
  /**
   * How long a post to `ingest` may take; default intervalMs, from 1 to 5 s. A stop waits for the post
   * in flight up to it; longer, a slow ingest holds the run back rather than losing the batch.
   */
  ingestTimeoutMs?: number;
  /** Stop after this many ticks; default: until interrupted. */
  ticks?: number;
  ingest?: { url: string; secret: string; keyId?: string };
  /**
   * Keep state (device key, zone store, ledger) here; default a temporary directory, removed at the end,
   * but for the ledger when there is an `ingest`.
   */
  stateDir?: string;
  frozenPolls?: number;
  devicesPerPerson?: number;
  /**
   * How the simulated people move: `lively` (the default, for a demo: zone changes within seconds) or
   * `realistic` (office life: people stay 5–40 s before walking on).
   */
  pace?: SimulationPace;
  output: 'table' | 'lines' | 'json';
}

export type SimulationPace = 'lively' | 'realistic';

export const PACES: Readonly<Record<SimulationPace, MotionModel>> = { lively: LIVELY_MOTION, realistic: REALISTIC_MOTION };

/**
 * Moves are summed over this many ticks. The world takes one step per tick whatever the interval, so
 * the window is counted in ticks: 30 s at the default 1 s interval, and just as many steps of walking
 * when the demo runs faster or slower.
 */
export const TRANSITION_WINDOW_TICKS = 30;

export interface SimulateDeps {
  startBuilding?: (options: SimulationOptions) => Promise<SimulatedBuilding>;
  /** Wraps the poller (tests record what the APs said). */
  wrapPoller?: (poller: Poller) => Poller;
  /** Ends the run after the tick in flight. */
  signal?: AbortSignal;
  /**
   * Told the temporary state as soon as it is made: what the caller must remove itself, should it have
   * to end the process before the run ends (a second Ctrl-C).
   */
  onTemporaryState?: (temporary: TemporaryState) => void;
}

/** The state of a run without `stateDir`, which the run removes at its end, but for a kept ledger. */
export interface TemporaryState {
  /** The directory of the secrets (the device key, the building's SSH private key and SNMP secrets), never a ledger that is kept. */
  dir: string;
  /**
   * Removes it now, and all but the ledger from a kept ledger's directory, as the end of the run does;
   * synchronous, for a caller about to end the process.
   */
  removeNow(): void;
}

export interface SimulationSummary {
  ticks: number;
  /** Σ|counted − truth| / Σ truth over every zone and tick. */
  errorRate: number;
  /** Batches by delivery (accepted, rejected, unreachable, kept). */
  deliveries: Record<string, number>;
  stateDir: string | null;
  /** The ledger file left after the run (with `stateDir`, or kept for the batches posted); null when removed. */
  ledger: string | null;
  ledgerHead: { seq: number; hash: string };
}

/** How far the counts are from the truth: Σ|counted − truth| and Σ truth over every zone. */
export function countError(counts: Readonly<Record<string, number>>, truth: Readonly<Record<string, number>>): { absolute: number; truth: number } {
  let absolute = 0;
  let total = 0;
  for (const zone of new Set([...Object.keys(counts), ...Object.keys(truth)])) {
    absolute += Math.abs((counts[zone] ?? 0) - (truth[zone] ?? 0));
    total += truth[zone] ?? 0;
  }
  return { absolute, truth: total };
}

/**
 * The names reports use for the simulated APs. An AP behind a controller that is keyed by MAC gets a
 * readable name, as an installer would give it in the config, so no MAC reaches an apClients reading.
 */
export function reportNamesOf(aps: readonly AccessPoint[]): Record<string, string> {
  const names: Record<string, string> = {};
  for (const ap of aps) {
    if (!ap.apZones) {
      names[ap.name] = ap.name;
      continue;
    }
    Object.keys(ap.apZones).forEach((identity, i) => {
      names[identity] = looksLikeIdentifier(identity) ? `${ap.name}-ap${i + 1}` : identity;
    });
  }
  return names;
}

const ratio = (a: number, b: number) => (b === 0 ? (a === 0 ? 0 : 1) : a / b);

/**
 * Where a run keeps what: the gateway's state (device key, zones, ledger), and the work directory (the
 * building's SSH keys and SNMP secrets, the collector's log). With `stateDir` both are it, and all stays.
 */
interface RunDirs {
  state: string;
  work: string;
  /** What is left after the run. */
  kept: 'everything' | 'ledger' | 'nothing';
}

/**
 * Runs the simulation; resolves with the exit code and a summary. A temporary state directory (no
 * `stateDir` given) is removed at the end, whatever the end: a failed start or a throw mid-run too. With
 * an ingest, the ledger of the batches posted is kept (see keptLedgerDir).
 */
export async function simulate(options: SimulateOptions, io: CommandIo, deps: SimulateDeps = {}): Promise<{ exitCode: number; summary: SimulationSummary }> {
  if (options.stateDir !== undefined) return simulateIn({ state: options.stateDir, work: options.stateDir, kept: 'everything' }, options, io, deps);
  const work = mkdtempSync(join(tmpdir(), 'lintel-edge-sim-'));
  let ledgerDir: string | undefined;
  const removeNow = () => {
    rmSync(work, { recursive: true, force: true });
    if (ledgerDir !== undefined) keepOnlyTheLedger(ledgerDir);
  };
  try {
    deps.onTemporaryState?.({ dir: work, removeNow });
    if (options.ingest) ledgerDir = keptLedgerDir(work);
    return await simulateIn({ state: ledgerDir ?? work, work, kept: ledgerDir === undefined ? 'nothing' : 'ledger' }, options, io, deps);
  } finally {
    removeNow();
  }
}

/**
 * The state directory of a run that posts without `stateDir`: its ledger is audit evidence of what left
 * the gateway, so the directory is not temporary. The device key, a secret, stays in the temporary
 * `work` directory and is only linked from here (the collector follows the link), so it is removed with
 * that directory; the link, and the zone store, go at the end of the run, a second Ctrl-C's included
 * (keepOnlyTheLedger).
 */
function keptLedgerDir(work: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'lintel-edge-ledger-'));
  try {
    const key = join(work, 'device.key');
    loadOrCreateDeviceKey(key);
    symlinkSync(key, statePaths(dir).deviceKey);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return dir;
}

/**
 * Leaves the ledger alone in a kept state directory, or removes the directory if no ledger was made.
 * Whatever else the gateway made there goes: the zone store, and the device key's link, which points
 * into the removed temporary directory. The ledger's -wal and -shm stay: a process ended with the ledger
 * still open (a second Ctrl-C) leaves its last entries in the -wal.
 */
function keepOnlyTheLedger(dir: string): void {
  const { ledger } = statePaths(dir);
  if (!existsSync(ledger)) {
    rmSync(dir, { recursive: true, force: true });
    return;
  }
  const name = basename(ledger);
  const kept = new Set([name, `${name}-wal`, `${name}-shm`]);
  for (const file of readdirSync(dir)) if (!kept.has(file)) rmSync(join(dir, file), { recursive: true, force: true });
}

async function simulateIn(dirs: RunDirs, options: SimulateOptions, io: CommandIo, deps: SimulateDeps): Promise<{ exitCode: number; summary: SimulationSummary }> {
  const stateDir = dirs.state;
  // The terminal belongs to the table; the collector's log goes to a file beside the state.
  const logger =
    options.output === 'json'
      ? silentLogger()
      : createLogger('lintel-edge', { level: 'info', destination: pino.destination({ dest: join(dirs.work, 'lintel-edge.log'), mkdir: true, sync: true }) });

  const building = await (deps.startBuilding ?? startSimulatedBuilding)({
    workDir: join(dirs.work, 'building'),
    ...(options.accessPoints !== undefined ? { accessPoints: options.accessPoints } : {}),
    ...(options.devices !== undefined ? { devices: options.devices } : {}),
    ...(options.zones !== undefined ? { zones: Array.from({ length: options.zones }, (_, i) => `zone-${String.fromCharCode(97 + (i % 26))}${i >= 26 ? Math.floor(i / 26) : ''}`) } : {}),
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
    ...(options.rebootRate !== undefined ? { rebootRate: options.rebootRate } : {}),
    ...(options.dialects ? { dialects: options.dialects } : {}),
    motion: PACES[options.pace ?? 'lively'],
  });
  const basePoller = createPoller({ dialects: loadDialects() });
  const poller = deps.wrapPoller ? deps.wrapPoller(basePoller) : basePoller;
  const reportNames = reportNamesOf(building.accessPoints);
  const devicesPerPerson = options.devicesPerPerson ?? 1.5;
  const config: DaemonConfig = {
    buildingId: 'simulated-building',
    pollIntervalMs: options.intervalMs,
    requestTimeoutMs: options.requestTimeoutMs ?? Math.max(50, Math.floor(options.intervalMs * 0.8)),
    zones: building.zones.map((id) => ({ id, devicesPerPerson })),
    tracker: {
      ...DEFAULT_TRACKER_CONFIG,
      frozenPolls: options.frozenPolls ?? DEFAULT_TRACKER_CONFIG.frozenPolls,
      transitionWindowPolls: TRANSITION_WINDOW_TICKS,
    },
    accessPoints: building.accessPoints,
    reportNames,
  };
  let gateway;
  try {
    gateway = openGateway({
      config,
      stateDir,
      poller,
      ...(options.ingest ? { ingest: { ...options.ingest, timeoutMs: options.ingestTimeoutMs ?? Math.max(1000, Math.min(options.intervalMs, 5000)) } } : {}),
      logger,
      processMetrics: false,
    });
  } catch (err) {
    await basePoller.close();
    await building.stop();
    throw err;
  }

  const destination = options.ingest ? `to ${options.ingest.url}` : 'no --ingest given';
  const region = createLiveRegion(io.out, () => io.columns);
  const deliveries: Record<string, number> = {};
  let absolute = 0;
  let truthTotal = 0;
  let ticks = 0;
  let next = Date.now();
  let ledgerHead = { seq: 0, hash: '' };
  let lastFailure: string | undefined;
  if (options.output === 'table' || options.output === 'lines') {
    io.out(`simulated building: ${building.accessPoints.length} access points, ${building.zones.length} zones; ${whereTheStateIs(dirs)}\n`);
  }
  try {
    while (!deps.signal?.aborted && (options.ticks === undefined || ticks < options.ticks)) {
      building.step();
      await building.ready();
      const truth = building.groundTruth().zoneCounts;
      const report: TickReport = await gateway.daemon.tick();
      ticks++;
      const error = countError(report.counts, truth);
      absolute += error.absolute;
      truthTotal += error.truth;
      deliveries[report.batch.delivery] = (deliveries[report.batch.delivery] ?? 0) + 1;
      if (report.batch.delivery !== 'accepted') lastFailure = report.batch.reason ?? report.batch.delivery;
      show(options, io, region, {
        report,
        truth,
        ticks,
        tickErrorRate: ratio(error.absolute, error.truth),
        overallErrorRate: ratio(absolute, truthTotal),
        destination,
        devicesPerPerson,
      });
      next += options.intervalMs;
      const wait = next - Date.now();
      if (wait > 0 && (options.ticks === undefined || ticks < options.ticks)) {
        await sleep(wait, undefined, deps.signal ? { signal: deps.signal } : {}).catch(() => undefined);
      } else if (wait <= 0) {
        next = Date.now();
      }
    }
  } finally {
    ledgerHead = gateway.ledger.head();
    await basePoller.close();
    await gateway.close();
    await building.stop();
  }
  const summary: SimulationSummary = {
    ticks,
    errorRate: ratio(absolute, truthTotal),
    deliveries,
    stateDir: dirs.kept === 'everything' ? stateDir : null,
    ledger: dirs.kept === 'nothing' ? null : gateway.paths.ledger,
    ledgerHead,
  };
  if (options.output === 'json') io.out(`${JSON.stringify({ summary })}\n`);
  else {
    io.out(
      `\n${ticks} ticks · error rate ${(summary.errorRate * 100).toFixed(1)}% · batches ${Object.entries(deliveries)
        .map(([k, v]) => `${v} ${k}`)
        .join(', ')}\n`,
    );
    io.out(`${whatIsLeft(dirs, gateway.paths.ledger, ledgerHead.seq)}\n`);
  }
  // Losing a batch now and then is normal (the next tick supersedes it); an ingest that took none means
  // the run did not do what --ingest asked, which a script running the demo must be able to see.
  if (options.ingest && ticks > 0 && !deliveries.accepted) {
    io.err(
      `lintel-edge: the ingest at ${options.ingest.url} accepted none of ${ticks} batches (last: ${lastFailure ?? 'none'}); check --ingest, --ingest-secret-file and --key-id\n`,
    );
    return { exitCode: 1, summary };
  }
  return { exitCode: 0, summary };
}

/** Where the state is, for the line before the first tick. */
function whereTheStateIs(dirs: RunDirs): string {
  if (dirs.kept === 'everything') return `state in ${dirs.state}`;
  return `state in ${dirs.work} (temporary)${dirs.kept === 'ledger' ? `; the ledger of the batches posted in ${dirs.state} (kept)` : ''}`;
}

/** What the run leaves, and how to check its ledger, for the last line. */
function whatIsLeft(dirs: RunDirs, ledger: string, headSeq: number): string {
  if (dirs.kept === 'nothing') return 'state removed (run with --state-dir <dir> to keep it, then: lintel-edge ledger verify --state-dir <dir>)';
  if (dirs.kept === 'ledger') {
    return `state removed, but for the ledger of the batches posted: ${ledger} (head seq ${headSeq}); check it with: lintel-edge ledger verify --ledger ${shellWord(ledger)}`;
  }
  return `ledger: ${ledger} (head seq ${headSeq}); check it with: lintel-edge ledger verify --state-dir ${shellWord(dirs.state)}`;
}

interface Shown {
  report: TickReport;
  truth: Record<string, number>;
  ticks: number;
  tickErrorRate: number;
  overallErrorRate: number;
  destination: string;
  devicesPerPerson: number;
}

function show(options: SimulateOptions, io: CommandIo, region: ReturnType<typeof createLiveRegion>, s: Shown): void {
  const { report } = s;
  if (options.output === 'json') {
    io.out(
      `${JSON.stringify({
        tick: s.ticks,
        timestamp: report.timestamp,
        counts: report.counts,
        truth: s.truth,
        errorRate: s.tickErrorRate,
        tracked: report.tracked,
        frozen: report.frozen,
        moved: report.stats.moved,
        aps: report.aps.map((a) => ({ ap: a.ap, ok: a.ok, stations: a.stations, ...(a.reason ? { reason: a.reason } : {}) })),
        batch: report.batch,
        durationMs: Math.round(report.durationMs),
      })}\n`,
    );
    return;
  }
  const zones = Object.keys(report.counts).map((zone) => ({
    zone,
    counted: report.counts[zone] ?? 0,
    truth: s.truth[zone] ?? 0,
    people: peopleFromDevices(report.counts[zone] ?? 0, s.devicesPerPerson),
  }));
  if (options.output === 'lines') {
    const cells = zones.map((z) => `${z.zone} ${z.counted}/${z.truth}`).join('  ');
    const down = report.aps.filter((a) => !a.ok).map((a) => a.ap);
    io.out(
      `tick ${s.ticks}  ${cells}  error ${(s.tickErrorRate * 100).toFixed(1)}%  batch #${report.batch.seq ?? '-'} ${report.batch.delivery}${down.length > 0 ? `  down: ${down.join(',')}` : ''}\n`,
    );
    return;
  }
  region.draw(
    renderLiveTable({
      title: 'Lintel edge · simulated building',
      tick: s.ticks,
      ...(options.ticks !== undefined ? { ticksPlanned: options.ticks } : {}),
      intervalMs: options.intervalMs,
      zones,
      aps: report.aps,
      transitions: report.transitions,
      transitionWindowTicks: TRANSITION_WINDOW_TICKS,
      tracked: report.tracked,
      frozen: report.frozen,
      batch: report.batch,
      destination: s.destination,
      tickMs: report.durationMs,
      tickErrorRate: s.tickErrorRate,
      overallErrorRate: s.overallErrorRate,
      color: io.isTty === true,
    }),
  );
}
