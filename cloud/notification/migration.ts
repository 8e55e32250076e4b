/**
 * The startup migration: for each alertable metric, every account that has temperature switched on in
 * a domain gets that metric switched on there, once. A marker per metric records that it ran. One lock
 * (a document inserted under a unique id) lets one replica run at a time, so two replicas starting at
 * once never update the same records together. The other replica waits until the holder has finished
 * before it goes on to serve: FerretDB 1.x applies an update by reading and writing back whole
 * documents, so a preference written through it while the holder's update runs could be lost. The
 * update only adds missing entries, so a stored choice is never overwritten and a re-run after a crash
 * changes nothing already done. A lock whose holder stopped is taken over once a replica has seen it
 * unchanged for the lease, on that replica's own monotonic clock: the holder's `claimedAt` is stamped by
 * its own clock, which may disagree with the waiter's.
 *
 * A replica stopped while it runs the migration releases the lock before its database client closes
 * ({@link StartupMigration}): a lock left behind would make every replica starting in the next 10 minutes
 * wait out the lease before it serves.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { ALERTABLE_METRICS } from '../../shared/catalog/metrics.js';
import { describeError } from '../../shared/describe-error.js';
import { settlesWithin } from '../../shared/lifecycle.js';
import type { NotificationStore } from './store.js';

/** A lock seen unchanged this long is taken over: its holder stopped before finishing. */
export const DEFAULT_MIGRATION_LEASE_MS = 10 * 60 * 1000;
/**
 * How much longer than the lease a replica waits for the lock by default. The lease counts from the
 * replica's first look at the lock, a little after its wait began: a wait of just the lease would end
 * before the takeover of a lock left behind, and every start would then go on without the migration.
 */
const WAIT_PAST_LEASE_MS = 60_000;
export const MIGRATION_LOCK_ID = 'startup-migration-lock';

export interface MigrationReport {
  /** Records of an earlier shape given their query fields. */
  backfilled: number;
  /**
   * Per metric: how many records were switched on, `done` (before, or by the replica this one waited
   * for), or `held` when another replica still held the lock after the wait.
   */
  metrics: Record<string, number | 'done' | 'held'>;
}

/** The migration was told to stop (the service is stopping) before it finished; it runs again at the next start. */
export class MigrationStoppedError extends Error {
  readonly code = 'ERR_MIGRATION_STOPPED';
  constructor() {
    super('the startup migration was stopped before it finished; it runs again at the next start');
    this.name = 'MigrationStoppedError';
  }
}

/** The marker id of the migration that switches `metric` on. */
export function markerId(metric: string): string {
  return `enable-metric:${metric}`;
}

/**
 * Runs the migration. Safe to call from several replicas at once and on every start.
 *
 * @example
 * await migrateAlertableMetrics(store, logger); // { backfilled: 0, metrics: { peopleCount: 12, airQuality: 12 } }
 */
export async function migrateAlertableMetrics(
  store: NotificationStore,
  logger: Logger,
  options: {
    owner?: string;
    leaseMs?: number;
    /**
     * How long to wait for another replica holding the lock, on the monotonic clock; default a minute
     * past the lease, by when a lock left behind has been taken over.
     */
    waitMs?: number;
    /** Pause between looks while waiting. Default 250 ms. */
    pollMs?: number;
    metrics?: readonly string[];
    /** Stops the migration at its next step (a wait, a metric), releasing the lock if it holds it. */
    signal?: AbortSignal;
  } = {},
): Promise<MigrationReport> {
  const owner = options.owner ?? randomUUID();
  const { signal } = options;
  const stopIfAsked = () => {
    if (signal?.aborted) throw new MigrationStoppedError();
  };
  const report: MigrationReport = { backfilled: 0, metrics: {} };
  const candidates = (options.metrics ?? ALERTABLE_METRICS).filter((m) => m !== 'temperature');
  const pending: string[] = [];
  for (const metric of candidates) {
    if (await store.isMarkerDone(markerId(metric))) report.metrics[metric] = 'done';
    else pending.push(metric);
  }
  const leaseMs = options.leaseMs ?? DEFAULT_MIGRATION_LEASE_MS;
  // On the monotonic clock: a wall clock stepped forward would end the wait at once, one stepped back
  // would make it last as long as the step.
  const waitUntil = performance.now() + (options.waitMs ?? leaseMs + WAIT_PAST_LEASE_MS);
  let waited = false;
  stopIfAsked();
  while ((await store.claimLock(MIGRATION_LOCK_ID, owner, leaseMs)) === 'held') {
    const unfinished: string[] = [];
    for (const metric of pending) if (!(await store.isMarkerDone(markerId(metric)))) unfinished.push(metric);
    if (unfinished.length === 0) {
      for (const metric of pending) report.metrics[metric] = 'done';
      if (pending.length > 0) logger.info({ metrics: pending }, 'migration: another replica ran it; waited for it to finish');
      return report;
    }
    if (performance.now() >= waitUntil) {
      for (const metric of pending) report.metrics[metric] = unfinished.includes(metric) ? 'held' : 'done';
      logger.warn({ pending: unfinished }, 'migration: another replica still holds the lock; going on without it');
      return report;
    }
    if (!waited) logger.info({ pending: unfinished }, 'migration: another replica holds the lock; waiting for it');
    waited = true;
    await sleep(options.pollMs ?? 250, undefined, { signal }).catch(() => undefined);
    stopIfAsked();
  }
  try {
    stopIfAsked();
    report.backfilled = await store.backfillDerivedFields();
    for (const metric of pending) {
      stopIfAsked();
      // Checked again under the lock: the previous holder may have finished it meanwhile.
      if (await store.isMarkerDone(markerId(metric))) {
        report.metrics[metric] = 'done';
        continue;
      }
      const modified = await store.enableWhereTemperatureOn(metric);
      await store.completeMarker(markerId(metric), owner, modified);
      report.metrics[metric] = modified;
      logger.info({ metric, modified }, 'migration: switched metric on where temperature is on');
    }
  } finally {
    await store.releaseLock(MIGRATION_LOCK_ID, owner);
  }
  return report;
}

/**
 * The startup migration of one service process, stoppable while it runs: `stop()` tells it to stop at
 * its next step and waits for it to release its lock, and past `timeoutMs` (a metric of many records,
 * a record lock it waits for) releases the lock itself, while the database client is still open. The
 * unfinished metric then fails when the client closes, and runs again at the next start.
 *
 * @example
 * const migration = new StartupMigration(store, logger);
 * await migration.run(); // in start()
 * await migration.stop(2000); // in stop(), before the database client closes
 */
export class StartupMigration {
  private readonly owner = randomUUID();
  private readonly stopping = new AbortController();
  private running: Promise<MigrationReport> | undefined;

  constructor(
    private readonly store: NotificationStore,
    private readonly logger: Logger,
    /** Pause between looks while another replica holds the lock; default that of {@link migrateAlertableMetrics}. */
    private readonly options: { pollMs?: number } = {},
  ) {}

  /**
   * Runs the migration; rejects with {@link MigrationStoppedError} when `stop()` was called before it
   * ended, even if its last step then finished: a start must not go on to serve after its stop began.
   */
  async run(): Promise<MigrationReport> {
    this.running = migrateAlertableMetrics(this.store, this.logger, { ...this.options, owner: this.owner, signal: this.stopping.signal });
    const report = await this.running;
    if (this.stopping.signal.aborted) throw new MigrationStoppedError();
    return report;
  }

  /** Whether the run had ended (its lock released by itself) within `timeoutMs`; its lock is released either way. */
  async stop(timeoutMs: number): Promise<boolean> {
    this.stopping.abort();
    if (!this.running || (await settlesWithin(this.running, timeoutMs))) return true;
    try {
      await this.store.releaseLock(MIGRATION_LOCK_ID, this.owner);
      this.logger.warn('the startup migration did not stop in time; its lock is released, and what it did not finish runs again at the next start');
    } catch (err) {
      this.logger.error({ error: describeError(err) }, 'the startup migration did not stop in time, and its lock could not be released: replicas starting in the next 10 minutes wait for it');
    }
    return false;
  }
}
