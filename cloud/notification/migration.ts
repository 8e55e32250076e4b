/**
 * The startup migration: for each alertable metric, every account that has temperature switched on in
 * a domain gets that metric switched on there, once. A marker per metric records that it ran; a marker
 * inserted under a unique id is the claim, so of two replicas starting at once only one runs a metric.
 * The update only adds missing entries, so a stored choice is never overwritten and a re-run after a
 * crash changes nothing that was already done.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { ALERTABLE_METRICS } from '../../shared/catalog/metrics.js';
import type { NotificationStore } from './store.js';

/** A claim older than this is taken over: its holder stopped before finishing. */
export const DEFAULT_MIGRATION_LEASE_MS = 10 * 60 * 1000;

export interface MigrationReport {
  backfilled: number;
  /** Per metric: how many records were switched on, or why it was skipped. */
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
 * await migrateAlertableMetrics(store, logger); // { backfilled: 0, metrics: { airQuality: 12, peopleCount: 12 } }
 */
export async function migrateAlertableMetrics(
  store: NotificationStore,
  logger: Logger,
  options: { owner?: string; leaseMs?: number; metrics?: readonly string[] } = {},
): Promise<MigrationReport> {
  const owner = options.owner ?? randomUUID();
  const leaseMs = options.leaseMs ?? DEFAULT_MIGRATION_LEASE_MS;
  const report: MigrationReport = { backfilled: await store.backfillDerivedFields(), metrics: {} };
  for (const metric of options.metrics ?? ALERTABLE_METRICS) {
    if (metric === 'temperature') continue;
    const id = markerId(metric);
    const claim = await store.claimMarker(id, owner, leaseMs);
    if (claim !== 'claimed') {
      report.metrics[metric] = claim;
      continue;
    }
    const modified = await store.enableWhereTemperatureOn(metric);
    await store.completeMarker(id, owner, modified);
    report.metrics[metric] = modified;
    logger.info({ metric, modified }, 'migration: switched metric on where temperature is on');
  }
  return report;
}
