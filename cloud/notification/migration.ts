/**
 * The startup migration: for each alertable metric, every account that has temperature switched on in
 * a domain gets that metric switched on there, once. A marker per metric records that it ran. One lock
 * (a document inserted under a unique id) lets one replica run at a time, so two replicas starting at
 * once never update the same records together; the other replica skips and the lock's holder finishes.
 * The update only adds missing entries, so a stored choice is never overwritten and a re-run after a
 * crash changes nothing already done. A lock whose holder stopped is taken over after its lease.
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
  /** Per metric: how many records were switched on, `done` before, or `held` by another replica. */
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
  options: { owner?: string; leaseMs?: number; metrics?: readonly string[] } = {},
): Promise<MigrationReport> {
  const owner = options.owner ?? randomUUID();
  const report: MigrationReport = { backfilled: 0, metrics: {} };
  const candidates = (options.metrics ?? ALERTABLE_METRICS).filter((m) => m !== 'temperature');
  const pending: string[] = [];
  for (const metric of candidates) {
    if (await store.isMarkerDone(markerId(metric))) report.metrics[metric] = 'done';
    else pending.push(metric);
  }
  if ((await store.claimLock(MIGRATION_LOCK_ID, owner, options.leaseMs ?? DEFAULT_MIGRATION_LEASE_MS)) === 'held') {
    for (const metric of pending) report.metrics[metric] = 'held';
    logger.info({ pending }, 'migration: another replica holds the lock; skipped');
    return report;
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
