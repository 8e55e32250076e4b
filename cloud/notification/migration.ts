/**
 * The startup migration: for each alertable metric, every account that has temperature switched on in
 * a domain gets that metric switched on there, once. A marker per metric records that it ran. One lock
 * (a document inserted under a unique id) lets one replica run at a time, so two replicas starting at
 * once never update the same records together. The other replica waits until the holder has finished
 * before it goes on to serve: FerretDB 1.x applies an update by reading and writing back whole
 * documents, so a preference written through it while the holder's update runs could be lost. The
 * update only adds missing entries, so a stored choice is never overwritten and a re-run after a crash
 * changes nothing already done. A lock whose holder stopped is taken over after its lease.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { ALERTABLE_METRICS } from '../../shared/catalog/metrics.js';
import type { NotificationStore } from './store.js';

/** A lock older than this is taken over: its holder stopped before finishing. */
export const DEFAULT_MIGRATION_LEASE_MS = 10 * 60 * 1000;
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
    /** How long to wait for another replica holding the lock; default the lease, after which it is taken over. */
    waitMs?: number;
    /** Pause between looks while waiting. Default 250 ms. */
    pollMs?: number;
    metrics?: readonly string[];
  } = {},
): Promise<MigrationReport> {
  const owner = options.owner ?? randomUUID();
  const report: MigrationReport = { backfilled: 0, metrics: {} };
  const candidates = (options.metrics ?? ALERTABLE_METRICS).filter((m) => m !== 'temperature');
  const pending: string[] = [];
  for (const metric of candidates) {
    if (await store.isMarkerDone(markerId(metric))) report.metrics[metric] = 'done';
    else pending.push(metric);
  }
  const leaseMs = options.leaseMs ?? DEFAULT_MIGRATION_LEASE_MS;
  const waitUntil = Date.now() + (options.waitMs ?? leaseMs);
  let waited = false;
  while ((await store.claimLock(MIGRATION_LOCK_ID, owner, leaseMs)) === 'held') {
    const unfinished: string[] = [];
    for (const metric of pending) if (!(await store.isMarkerDone(markerId(metric)))) unfinished.push(metric);
    if (unfinished.length === 0) {
      for (const metric of pending) report.metrics[metric] = 'done';
      if (pending.length > 0) logger.info({ metrics: pending }, 'migration: another replica ran it; waited for it to finish');
      return report;
    }
    if (Date.now() >= waitUntil) {
      for (const metric of pending) report.metrics[metric] = unfinished.includes(metric) ? 'held' : 'done';
      logger.warn({ pending: unfinished }, 'migration: another replica still holds the lock; going on without it');
      return report;
    }
    if (!waited) logger.info({ pending: unfinished }, 'migration: another replica holds the lock; waiting for it');
    waited = true;
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 250));
  }
  try {
    report.backfilled = await store.backfillDerivedFields();
    for (const metric of pending) {
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
