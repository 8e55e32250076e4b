/**
 * The collector's tick: poll every AP → tracker → one batch → ledger → post. An AP that fails, a store
 * that cannot write, an ingest that refuses: each is logged and counted, and the next tick runs anyway.
 */
import type { Logger } from 'pino';
import { MAX_READINGS_PER_BATCH, type Reading } from '../../shared/catalog/validate.js';
import { describeError } from '../../shared/describe-error.js';
import type { EdgeConfig } from './config/load.js';
import { retargetSeries, type EdgeMetrics } from './metrics.js';
import type { ApPollResult, Poller } from './poll/types.js';
import type { Ledger, Delivery } from './report/ledger.js';
import type { BatchPoster } from './report/poster.js';
import { redactIdentifiers } from './report/identifiers.js';
import { batchIdOf, buildReadings, encodeBatch } from './report/readings.js';
import type { DeviceHasher } from './zones/device-key.js';
import { observe } from './zones/observe.js';
import { PairsAtIngest } from './zones/pairs-at-ingest.js';
import { resumeSavedState, startedOver, type StopLength } from './zones/resume.js';
import type { ZoneStore } from './zones/store.js';
import { applyPoll, frozenCount, rezoneToConfig, transitionWindow, zoneCounts } from './zones/tracker.js';
import type { PollOutcome, PollStats, TrackerState, ZonePairCount } from './zones/types.js';

export type DaemonConfig = Pick<EdgeConfig, 'buildingId' | 'pollIntervalMs' | 'requestTimeoutMs' | 'zones' | 'tracker' | 'accessPoints' | 'reportNames'>;

export interface DaemonDeps {
  config: DaemonConfig;
  poller: Poller;
  hasher: DeviceHasher;
  zones: ZoneStore;
  ledger: Ledger;
  /** Where batches go; without one they are kept in the ledger only. */
  poster?: BatchPoster;
  metrics: EdgeMetrics;
  logger: Logger;
  /** Epoch ms, for the ticks' timestamps (the schedule keeps to the monotonic clock); injectable for tests. */
  clock?: () => number;
  /** Ledger entries older than this are pruned (checked hourly). Default 30 days. */
  ledgerRetentionMs?: number;
  /** Called after every tick with what it did. */
  onTick?: (report: TickReport) => void;
}

/** What one AP did in a tick, by its reported name. */
export interface ApTickStatus {
  ap: string;
  ok: boolean;
  stations: number;
  durationMs: number;
  reason?: string;
  /** Why it failed, with anything identifier-like redacted. */
  error?: string;
}

export interface TickReport {
  poll: number;
  timestamp: number;
  durationMs: number;
  counts: Record<string, number>;
  transitions: ZonePairCount[];
  aps: ApTickStatus[];
  stats: PollStats;
  tracked: number;
  frozen: number;
  /**
   * The tick's batch. A tick of more than MAX_READINGS_PER_BATCH readings goes as several batches,
   * `<batchId>#1/3`, `#2/3`, …: `parts` counts them, `seq` is the last one's ledger entry, and
   * `delivery` the worst of theirs.
   */
  batch: { batchId: string; readings: number; refused: number; parts: number; seq: number | null; delivery: Delivery | 'not_recorded'; reason?: string };
}

type BatchDelivery = { seq: number | null; delivery: Delivery | 'not_recorded'; reason?: string };

/**
 * Ticks stamped before this are taken for a wall clock not yet set (a gateway booting at 1970 before
 * NTP): their batches are neither recorded nor sent. The cloud would refuse readings that old, and the
 * gateway's own `ledger audit` would flag each as implausible for the month its entries are kept.
 */
export const CLOCK_FLOOR_MS = Date.UTC(2024, 0, 1);
/**
 * Ticks stamped at or after this are taken for a wrong clock too (an RTC that fell back to 2106, a typo
 * in `date -s`), for the same reasons, as `doctor` takes them.
 */
export const CLOCK_CEILING_MS = Date.UTC(2100, 0, 1);

/** From the best outcome to the worst: a tick's several batches report the worst of theirs. */
const DELIVERY_RANK: ReadonlyArray<Delivery | 'not_recorded'> = ['accepted', 'kept', 'unreachable', 'rejected', 'not_recorded'];

/** The worse of two deliveries, with its reason, and the later ledger entry. */
function worstOf(earlier: BatchDelivery, later: BatchDelivery): BatchDelivery {
  const worse = DELIVERY_RANK.indexOf(later.delivery) > DELIVERY_RANK.indexOf(earlier.delivery) ? later : earlier;
  return { ...worse, seq: later.seq ?? earlier.seq };
}

/**
 * A tick's readings in batches the ingest takes: one batch under the tick's id when they fit (nearly
 * always), else consecutive slices of at most `max`, each under `<batchId>#<i>/<n>`.
 *
 * @example
 * batchesOf('hq@2025-11-22T19:04:14.000Z', readings7000, 5000).map((b) => b.batchId);
 * // ['hq@2025-11-22T19:04:14.000Z#1/2', 'hq@2025-11-22T19:04:14.000Z#2/2']
 */
export function batchesOf<R>(batchId: string, readings: readonly R[], max: number = MAX_READINGS_PER_BATCH): Array<{ batchId: string; readings: readonly R[] }> {
  if (readings.length <= max) return [{ batchId, readings }];
  const parts = Math.ceil(readings.length / max);
  return Array.from({ length: parts }, (_, i) => ({ batchId: `${batchId}#${i + 1}/${parts}`, readings: readings.slice(i * max, (i + 1) * max) }));
}

/** What a reload may change in a running collector, applied between two ticks. */
export interface DaemonSettings {
  config: DaemonConfig;
  /** Where batches go from the next tick; without one they are kept in the ledger only. */
  poster?: BatchPoster;
  ledgerRetentionMs?: number;
}

/** The zoneTransition readings of a batch, as the zone pairs they report. */
function transitionsIn(readings: readonly Reading[]): ZonePairCount[] {
  const pairs: ZonePairCount[] = [];
  for (const reading of readings) {
    if (reading.type === 'zoneTransition') pairs.push({ from: String(reading.fromRoomId), to: reading.roomId, count: Number(reading.zoneTransition) });
  }
  return pairs;
}

/** What {@link EdgeDaemon.reconfigure} did: `applied: false` when the collector was stopping. */
export interface Reconfigured {
  applied: boolean;
  /** Devices counted in the new zone of their AP. */
  rezoned: number;
}

/**
 * The name each AP's results are reported under: the AP's own, or each AP behind a controller.
 *
 * @example
 * reportedApNames(config); // ['lobby-1', 'wlc-ap1', 'wlc-ap2']
 */
export function reportedApNames(config: Pick<DaemonConfig, 'accessPoints' | 'reportNames'>): string[] {
  const names = new Set<string>();
  for (const ap of config.accessPoints) {
    if (ap.apZones) for (const identity of Object.keys(ap.apZones)) names.add(config.reportNames[identity] ?? identity);
    else names.add(config.reportNames[ap.name] ?? ap.name);
  }
  return [...names];
}

/** The zone of every AP a poll result can name (an AP, or an AP behind a controller). */
function zoneOfEachAp(config: Pick<DaemonConfig, 'accessPoints'>): Map<string, string> {
  const zones = new Map<string, string>();
  for (const ap of config.accessPoints) {
    if (ap.apZones) for (const [identity, zone] of Object.entries(ap.apZones)) zones.set(identity, zone);
    else zones.set(ap.name, ap.zone);
  }
  return zones;
}

/** What became of the state, in the log line of a zone file set aside: at a load, a save, a failed save. */
const SET_ASIDE_OUTCOME = {
  load: 'counting starts over; devices are found again within a few polls',
  save: 'the state in memory was saved whole into a new file, and counting goes on',
  unsaved: 'the state in memory could not be saved into a new file yet: counting goes on in memory, and the first save that succeeds writes it whole',
} as const;

/**
 * Why counting started over: at a start, after a stop it could not take the saved state up as it is
 * (see zones/resume.ts); while running, after the wall clock stepped forward (see
 * {@link EdgeDaemon.followClockStep}).
 */
const STARTED_OVER_BECAUSE: Record<Exclude<StopLength, 'within-window'> | 'clock-went-forward', string> = {
  'longer-than-window': 'the collector was stopped for longer than the transition window',
  unknown: 'the saved zone state has no time (it was saved by an older version), so how long the collector was stopped is unknown',
  'clock-went-back': 'the saved zone state is dated after the wall clock (the clock went back, or is not set yet), so how long the collector was stopped is unknown',
  'clock-went-forward':
    'the wall clock stepped forward by more than the transition window between two ticks (a clock restored at boot, then set by NTP), so how long the collector was stopped before it started is unknown',
};

const HOUR_MS = 3_600_000;
const DEFAULT_RETENTION_MS = 30 * 24 * HOUR_MS;

/**
 * The collector. `tick()` runs one tick on demand (the simulator drives it); `start()` runs ticks on the
 * poll interval until `stop()`. The composition root owns (and closes) the poller, stores and poster.
 */
export class EdgeDaemon {
  private state: TrackerState | undefined;
  private config: DaemonConfig;
  private poster: BatchPoster | undefined;
  private ledgerRetentionMs: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The scheduled tick in flight, until it settles. */
  private running: Promise<unknown> | undefined;
  /** The monotonic slot of the last scheduled tick: a new poll interval counts from it. */
  private lastSlot: number | undefined;
  private stopped = true;
  /** Set by stop() until the next start(): the stop in progress, which later calls share. */
  private stopping: Promise<void> | undefined;
  private lastPrune = 0;
  /** Whether the last tick's wall clock was set (from {@link CLOCK_FLOOR_MS}, before {@link CLOCK_CEILING_MS}); undefined before the first. */
  private clockSet: boolean | undefined;
  private readonly apDown = new Map<string, boolean>();
  /**
   * Whether the last save of the zone state failed: the next one is then complete (it also removes the
   * stored devices that left meanwhile), so nothing of the failed polls is kept in memory to replay.
   */
  private saveFailed = false;
  /**
   * Whether the loaded state started over after a long stop: the store still holds the devices it
   * dropped, so the next save is complete too.
   */
  private startedOver = false;
  /** The wall clock (epoch ms) and the monotonic clock (performance.now) at the last tick's start. */
  private lastTickClocks: { wall: number; monotonic: number } | undefined;
  /**
   * The zone pairs the ingest may still hold at a non-zero count, so that a pair whose one 0 was in a
   * lost batch is reported with 0 again until a batch carrying it is delivered. Saved with the zone
   * state at each tick and loaded with it: a restart after a lost batch reports the 0 too.
   */
  private pairsAtIngest = new PairsAtIngest();

  constructor(private readonly deps: DaemonDeps) {
    this.config = deps.config;
    this.poster = deps.poster;
    this.ledgerRetentionMs = deps.ledgerRetentionMs;
  }

  /** Loads the saved state and starts ticking on the interval. */
  async start(): Promise<void> {
    this.load();
    this.stopped = false;
    this.stopping = undefined;
    const head = this.deps.ledger.head();
    // At once, not at the first batch: a restarted gateway read 0 until then (for good while its clock is unset).
    this.deps.metrics.ledgerHead.set(head.seq);
    this.deps.logger.info(
      { aps: this.config.accessPoints.length, zones: this.config.zones.length, tracked: this.state?.devices.size ?? 0, ledgerSeq: head.seq, ledgerHead: head.hash },
      'collector started',
    );
    this.schedule(performance.now());
  }

  /**
   * Stops ticking, after the tick in flight (if any) completes: its post in flight runs out, but the
   * parts of a large tick not yet sent are dropped, never recorded. A poll in flight that the poller's
   * closing cuts short is dropped, not counted: its APs were cut off, not silent, and counting them
   * would age every device one poll towards frozen and send a batch without their stations. So close
   * the poller after calling this, and await both.
   */
  stop(): Promise<void> {
    this.stopping ??= this.stopTicking();
    return this.stopping;
  }

  private async stopTicking(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
    try {
      const head = this.deps.ledger.head();
      this.deps.logger.info({ ledgerSeq: head.seq, ledgerHead: head.hash }, 'collector stopped');
    } catch {
      this.deps.logger.info('collector stopped');
    }
  }

  private now(): number {
    return (this.deps.clock ?? Date.now)();
  }

  /**
   * The tracker state, loaded once, at `now`. After a stop longer than the transition window, or of
   * unknown length, it starts over (see resumeSavedState for why): the moves saved before the stop are
   * not reported again as moves of the current window, and the counts start from what the APs report
   * now, not from the devices saved then. A state saved before an AP was moved to another zone in the
   * configuration is brought to it: those devices count in their AP's zone from the first tick, not
   * in the old one for `switchPolls` ticks and then as a transition nobody made.
   */
  private load(now: number = this.now()): TrackerState {
    if (!this.state) {
      const { zones, logger } = this.deps;
      const saved = zones.load();
      const savedAt = zones.savedAt();
      this.pairsAtIngest = PairsAtIngest.of(zones.pairsAtIngest());
      this.noteSetAside();
      const { pollIntervalMs, tracker } = this.config;
      const resumed = resumeSavedState(saved, { savedAt, now, pollIntervalMs, transitionWindowPolls: tracker.transitionWindowPolls });
      if (resumed.stop !== 'within-window' && saved.poll > 0) {
        const stoppedS = savedAt === undefined ? undefined : Math.round((now - savedAt) / 1000);
        this.noteStartedOver(resumed.stop, { stoppedS, dropped: saved.devices.size });
      }
      this.startedOver = resumed.startedOver;
      const { state, rezoned } = rezoneToConfig(resumed.state, zoneOfEachAp(this.config));
      if (rezoned > 0) logger.info({ devices: rezoned }, 'devices follow their AP to the zone the configuration gives it now');
      this.state = state;
    }
    return this.state;
  }

  /**
   * The state to count on from at a tick whose wall clock moved further since the last tick than the
   * monotonic clock did, by more than the transition window: it starts over, as after a stop of unknown
   * length at a start, for the wall clock the state was taken up at may have been wrong. A gateway
   * without an RTC boots with the clock it saved at its shutdown (fake-hwclock): a start on Monday
   * morning reads Friday evening, the saved state looks seconds old, and Friday's moves and devices
   * would go on being reported once NTP sets the clock. A suspend of the whole gateway longer than the
   * window (the monotonic clock does not count a suspend) is a stop longer than the window too. A step
   * back is no such sign (the tracker counts in polls, not in wall-clock time), nor a step forward
   * within the window, which a restart within the window would be taken up as anyway.
   */
  private followClockStep(state: TrackerState, monotonic: number, wall: number): TrackerState {
    const last = this.lastTickClocks;
    this.lastTickClocks = { wall, monotonic };
    if (last === undefined) return state;
    const { pollIntervalMs, tracker } = this.config;
    const stepMs = wall - last.wall - (monotonic - last.monotonic);
    if (stepMs <= pollIntervalMs * tracker.transitionWindowPolls) return state;
    this.noteStartedOver('clock-went-forward', { steppedS: Math.round(stepMs / 1000), dropped: state.devices.size });
    this.startedOver = true;
    this.state = startedOver(state, tracker.transitionWindowPolls);
    return this.state;
  }

  /** Logs a start over, with the stop or the step that caused it and the devices it dropped. */
  private noteStartedOver(why: keyof typeof STARTED_OVER_BECAUSE, details: { stoppedS?: number | undefined; steppedS?: number; dropped: number }): void {
    const { pollIntervalMs, tracker } = this.config;
    this.deps.logger.info(
      { ...details, windowS: (pollIntervalMs * tracker.transitionWindowPolls) / 1000 },
      `${STARTED_OVER_BECAUSE[why]}: counting starts over from what the APs report now, and the moves saved before the stop are not reported again`,
    );
  }

  /**
   * Logs each unreadable zone file the store set aside (no device in it is named): when opening or
   * loading, counting starts over; when saving, the state in memory went whole into the new file, or,
   * when that save failed all the same, it goes there at the first save that succeeds.
   */
  private noteSetAside(when: keyof typeof SET_ASIDE_OUTCOME = 'load'): void {
    const outcome = SET_ASIDE_OUTCOME[when];
    for (const file of this.deps.zones.takeSetAside()) {
      this.deps.logger.warn({ setAsideAs: file.path, reason: file.reason }, `the zone state file was unreadable (not a database, corrupt, or lacking a table or column): it was set aside and ${outcome}`);
    }
  }

  /**
   * Takes a new configuration (and poster) between two ticks: waits for the tick in flight, then applies
   * it before the next one starts, so no poll, tracking step or batch ever mixes two configurations.
   * Devices of an AP moved to another zone follow it, as at a start over a saved state; those of an AP
   * no longer configured arrive at the next tick where they are heard, with no move (see tracker.ts).
   * Not applied once the collector is stopping.
   */
  async reconfigure(settings: DaemonSettings): Promise<Reconfigured> {
    // The next tick starts from a timer, so it cannot begin between the tick settling and this
    // continuation; a tick that started meanwhile (a timer of 0) is waited for too.
    while (this.running) await this.running.catch(() => undefined);
    if (this.stopping) return { applied: false, rezoned: 0 };
    const previous = this.config;
    this.config = settings.config;
    this.poster = settings.poster;
    this.ledgerRetentionMs = settings.ledgerRetentionMs;
    let rezoned = 0;
    if (this.state) {
      const result = rezoneToConfig(this.state, zoneOfEachAp(settings.config));
      this.state = result.state;
      rezoned = result.rezoned;
    }
    this.followConfiguredAps(previous);
    if (settings.config.pollIntervalMs !== previous.pollIntervalMs) this.rearm();
    return { applied: true, rezoned };
  }

  /**
   * Drops what the collector kept of APs no longer configured (whether they were down, their metric
   * series: a removed AP is not a down one) and starts the series of new APs and zones at 0.
   */
  private followConfiguredAps(previous: DaemonConfig): void {
    const { metrics } = this.deps;
    const before = { aps: reportedApNames(previous), zones: previous.zones.map((z) => z.id) };
    const after = { aps: reportedApNames(this.config), zones: this.config.zones.map((z) => z.id) };
    const current = new Set(after.aps);
    for (const ap of before.aps) if (!current.has(ap)) this.apDown.delete(ap);
    retargetSeries(metrics, before, after);
  }

  /** Moves the pending tick to the new poll interval, counted from the last tick's slot. */
  private rearm(): void {
    if (this.stopped || !this.timer || this.lastSlot === undefined) return;
    clearTimeout(this.timer);
    this.schedule(this.lastSlot + this.config.pollIntervalMs);
  }

  /**
   * Runs a tick at `slot` and schedules the next one. Slots are on the monotonic clock: the wall clock
   * may be stepped (NTP), and a step back would otherwise hold the next tick back by the step.
   */
  private schedule(slot: number): void {
    if (this.stopped) return;
    const delay = Math.max(0, slot - performance.now());
    this.timer = setTimeout(() => {
      const started = performance.now();
      this.timer = undefined;
      this.lastSlot = slot;
      const run = this.scheduledTick().catch((err) => this.deps.logger.error({ error: describeError(err) }, 'tick failed'));
      this.running = run;
      void run.then(() => {
        this.running = undefined;
        const interval = this.config.pollIntervalMs;
        let next = slot + interval;
        const now = performance.now();
        if (now > next) {
          this.deps.metrics.tickOverruns.inc();
          this.deps.logger.warn({ tookMs: Math.round(now - started), intervalMs: interval }, 'tick took longer than the poll interval');
          next = now;
        }
        this.schedule(next);
      });
    }, delay);
  }

  /** Runs one tick: poll, track, report. Never rejects for an AP, store or ingest failure. */
  async tick(): Promise<TickReport> {
    const started = performance.now();
    const timestamp = this.now();
    return this.settle(await this.pollAll(), started, timestamp);
  }

  /** A tick of the schedule: the same, unless the collector began stopping during the poll. */
  private async scheduledTick(): Promise<void> {
    const started = performance.now();
    const timestamp = this.now();
    const results = await this.pollAll();
    if (this.stopping) {
      this.deps.logger.info({ aps: results.length }, 'the poll in flight when stopping was dropped');
      return;
    }
    await this.settle(results, started, timestamp);
  }

  /** Tracks one poll's results, then reports and delivers the tick's batch. */
  private async settle(results: ApPollResult[], started: number, timestamp: number): Promise<TickReport> {
    const { metrics, logger } = this.deps;
    const config = this.config;
    const state = this.followClockStep(this.load(timestamp), started, timestamp);
    const apStatus = this.noteAps(results);

    const outcome = applyPoll(state, observe(results, this.deps.hasher), config.tracker);
    this.state = outcome.state;
    // before the save, which keeps the pairs this tick reports
    const transitions = this.pairsAtIngest.report(transitionWindow(outcome.state, config.tracker));
    this.save(outcome, timestamp);
    const zoneIds = config.zones.map((z) => z.id);
    const counts = zoneCounts(outcome.state, zoneIds);

    const built = buildReadings({
      buildingId: config.buildingId,
      timestamp,
      zones: config.zones,
      counts,
      transitions,
      apClients: apStatus.filter((a) => a.ok).map((a) => ({ ap: a.ap, stations: a.stations })),
    });
    if (built.refused.length > 0) {
      metrics.readingsRefused.inc(built.refused.length);
      logger.warn({ refused: built.refused }, 'readings refused by the catalog were not sent');
    }
    const batchId = batchIdOf(config.buildingId, timestamp);
    const parts = batchesOf(batchId, built.readings);
    const deliveries: BatchDelivery[] = [];
    const clockSet = timestamp >= CLOCK_FLOOR_MS && timestamp < CLOCK_CEILING_MS;
    if (clockSet !== this.clockSet) {
      if (!clockSet) logger.warn({ clock: new Date(timestamp).toISOString() }, 'the wall clock is not set (before 2024, or 2100 and later): devices are tracked, but no batch is recorded or sent until it is (NTP)');
      else if (this.clockSet === false) logger.info({ clock: new Date(timestamp).toISOString() }, 'the wall clock is set: batches are recorded and sent again');
      this.clockSet = clockSet;
    }
    for (const part of parts) {
      const delivered = await this.deliverPart(part, clockSet, timestamp);
      metrics.batches.inc({ delivery: delivered.delivery });
      if (delivered.delivery === 'accepted' || delivered.delivery === 'kept') this.pairsAtIngest.delivered(transitionsIn(part.readings));
      deliveries.push(delivered);
    }
    // batchesOf gives at least one part.
    const batch = deliveries.reduce(worstOf);

    const frozen = frozenCount(outcome.state);
    const durationMs = performance.now() - started;
    metrics.ticks.inc();
    metrics.tickSeconds.observe(durationMs / 1000);
    for (const zone of zoneIds) metrics.zoneDevices.set({ zone }, counts[zone] ?? 0);
    metrics.trackedDevices.set(outcome.state.devices.size);
    metrics.frozenDevices.set(frozen);
    metrics.zoneMoves.inc(outcome.stats.moved);
    if (batch.seq !== null) metrics.ledgerHead.set(batch.seq);

    const report: TickReport = {
      poll: outcome.state.poll,
      timestamp,
      durationMs,
      counts,
      transitions,
      aps: apStatus,
      stats: outcome.stats,
      tracked: outcome.state.devices.size,
      frozen,
      batch: { batchId, readings: built.readings.length, refused: built.refused.length, parts: parts.length, ...batch },
    };
    logger.info(
      {
        poll: report.poll,
        durationMs: Math.round(durationMs),
        devices: outcome.state.devices.size,
        frozen,
        moved: outcome.stats.moved,
        apsDown: apStatus.filter((a) => !a.ok).length,
        readings: built.readings.length,
        ledgerSeq: batch.seq,
        delivery: batch.delivery,
      },
      'tick',
    );
    if (clockSet) this.pruneLedger(timestamp);
    this.deps.onTick?.(report);
    return report;
  }

  /**
   * Saves one poll. Every device of the state is in each poll's `changed`, so the next save rewrites
   * what a failed one missed, except its removals. The first save after a failure is therefore complete:
   * the store drops every stored device the state no longer holds, or a device gone during the failure
   * would come back at the next start. Nothing of the failed polls is held meanwhile, however long the
   * store stays unwritable and however many devices come and go. The poll's wall-clock time is saved
   * with it, for the next start to tell how long the collector was stopped, and the zone pairs the
   * ingest may still hold at a count (the 0s delivered in this tick's batch leave them at the next save).
   */
  private save(outcome: PollOutcome, at: number): void {
    try {
      this.deps.zones.save(outcome, { complete: this.saveFailed || this.startedOver, at, pairsAtIngest: this.pairsAtIngest.list() });
      this.noteSetAside('save');
      if (this.saveFailed) this.deps.logger.info({ devices: outcome.state.devices.size }, 'the zone state is saved again');
      this.saveFailed = false;
      this.startedOver = false;
    } catch (err) {
      this.saveFailed = true;
      // A file set aside before the save failed (on the new file) is logged all the same.
      this.noteSetAside('unsaved');
      this.deps.logger.error({ error: describeError(err) }, 'cannot save the zone state; counting continues in memory');
    }
  }

  private async pollAll(): Promise<ApPollResult[]> {
    const { poller } = this.deps;
    const config = this.config;
    try {
      return await poller.pollAll(config.accessPoints, config.requestTimeoutMs);
    } catch (err) {
      // The poller's contract is never to reject; if it does, every AP counts as silent this tick.
      this.deps.logger.error({ error: describeError(err) }, 'polling failed; every AP counts as silent this tick');
      // Each AP as the poller names it: an AP behind a controller by its apZones key, so the devices it
      // carries are frozen, not taken for gone.
      const silent = (ap: string, zone: string): ApPollResult => ({ ap, zone, ok: false, error: 'poller failed', durationMs: 0, reason: 'error' });
      return config.accessPoints.flatMap((ap) => (ap.apZones ? Object.entries(ap.apZones).map(([identity, zone]) => silent(identity, zone)) : [silent(ap.name, ap.zone)]));
    }
  }

  /** Metrics and logs per AP; a change of state (down, back up) is logged once. */
  private noteAps(results: readonly ApPollResult[]): ApTickStatus[] {
    const { metrics, logger } = this.deps;
    const config = this.config;
    return results.map((result) => {
      const ap = config.reportNames[result.ap] ?? result.ap;
      metrics.apPollSeconds.set({ ap }, result.durationMs / 1000);
      if (result.ok) {
        metrics.apUp.set({ ap }, 1);
        metrics.apStations.set({ ap }, result.stations.length);
        metrics.apPolls.inc({ ap, outcome: 'ok' });
        if (this.apDown.get(ap)) logger.info({ ap }, 'access point answers again');
        this.apDown.set(ap, false);
        return { ap, ok: true, stations: result.stations.length, durationMs: result.durationMs };
      }
      const reason = result.reason ?? 'error';
      const error = redactIdentifiers(result.error);
      metrics.apUp.set({ ap }, 0);
      metrics.apPolls.inc({ ap, outcome: reason });
      // A controller that reports an AP down did answer: the AP is what is silent.
      const silent = reason === 'ap_down' ? 'its controller reports it down' : 'it did not answer';
      if (!this.apDown.get(ap)) logger.warn({ ap, reason, error }, `access point silent (${silent}); its devices are frozen`);
      else logger.debug({ ap, reason, error }, 'access point still silent');
      this.apDown.set(ap, true);
      return { ap, ok: false, stations: 0, durationMs: result.durationMs, reason, error };
    });
  }

  /**
   * One part of a tick's batch, unless it must not go: none while the wall clock is not set, and none
   * once the collector is stopping. The stop allows the post in flight its timeout; each part after it
   * would add another, past the stop's deadline, so the parts left are neither recorded nor sent: the
   * first tick after the next start supersedes them, as any tick supersedes a lost batch.
   */
  private async deliverPart(part: { batchId: string; readings: readonly Reading[] }, clockSet: boolean, timestamp: number): Promise<BatchDelivery> {
    if (!clockSet) return { seq: null, delivery: 'not_recorded', reason: 'the wall clock is not set' };
    if (this.stopping) {
      this.deps.logger.info({ batchId: part.batchId }, 'stopping: this part of the tick is neither recorded nor sent');
      return { seq: null, delivery: 'not_recorded', reason: 'the collector is stopping' };
    }
    return this.deliver(encodeBatch(part.batchId, part.readings), timestamp);
  }

  /** Ledger first (what is not recorded is not sent), then the post. */
  private async deliver(body: string, timestamp: number): Promise<BatchDelivery> {
    const { ledger, logger } = this.deps;
    const poster = this.poster;
    let seq: number;
    try {
      seq = ledger.append(body, timestamp).seq;
    } catch (err) {
      logger.error({ error: describeError(err) }, 'cannot append to the export ledger; the batch is not sent');
      return { seq: null, delivery: 'not_recorded' };
    }
    let delivery: Delivery = 'kept';
    let reason: string | undefined;
    if (poster) {
      const result = await poster.post(body);
      delivery = result.outcome;
      if (result.outcome === 'rejected') {
        // The poster's reason is redacted before it is cut (reasonOf); redacted again here, where it is
        // logged, whatever poster gave it: redacting a redacted line changes nothing.
        const why = redactIdentifiers(result.reason);
        reason = `${result.status} ${why}`;
        logger.warn({ status: result.status, reason: why, ledgerSeq: seq }, 'ingest rejected the batch; dropped, the next tick supersedes it');
      } else if (result.outcome === 'unreachable') {
        reason = result.reason;
        logger.warn({ reason: result.reason, ledgerSeq: seq }, 'ingest unreachable; batch dropped, the next tick supersedes it');
      }
    }
    try {
      ledger.setDelivery(seq, delivery);
    } catch (err) {
      logger.error({ error: describeError(err) }, 'cannot record the delivery in the ledger');
    }
    return reason === undefined ? { seq, delivery } : { seq, delivery, reason };
  }

  /**
   * Prunes the ledger at most hourly by the entries' wall-clock times. That clock can step (a bad RTC, a
   * typo in `date -s`, a gateway booting at 1970 before NTP), so the newest retention's worth of
   * entries at the poll interval (one a tick, as many as a right clock keeps) always stays: a step
   * forward cannot empty the audit trail. A step back (the clock corrected after a step forward) prunes
   * at once and counts the hour from there, so pruning never waits for the wrong clock's future.
   */
  private pruneLedger(now: number): void {
    if (now >= this.lastPrune && now - this.lastPrune < HOUR_MS) return;
    this.lastPrune = now;
    try {
      const retentionMs = this.ledgerRetentionMs ?? DEFAULT_RETENTION_MS;
      const keepNewest = Math.ceil(retentionMs / this.config.pollIntervalMs) + 1;
      const removed = this.deps.ledger.prune(now - retentionMs, keepNewest);
      if (removed > 0) {
        const start = this.deps.ledger.start();
        this.deps.logger.info({ removed, checkpointSeq: start.seq, checkpointHash: start.hash }, 'pruned old ledger entries');
      }
    } catch (err) {
      this.deps.logger.error({ error: describeError(err) }, 'cannot prune the ledger');
    }
  }
}
