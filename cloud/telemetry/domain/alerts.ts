/**
 * Threshold resolution and the alert events a batch raises.
 */
import { createHash } from 'node:crypto';
import { breachesOf, type Bounds } from '../../../shared/catalog/validate.js';
import type { ValidReading } from './batch.js';

/** A stored thresholds row: building-level when `roomId` is null. */
export interface ThresholdRow {
  buildingId: string;
  roomId: string | null;
  metric: string;
  bounds: Record<string, number>;
}

/** The thresholds in force for one room and metric. */
export type BoundsResolver = (buildingId: string, roomId: string, metric: string) => Bounds;

/**
 * Resolves bounds room over building, bound by bound: a room's value for a bound key wins; a bound the
 * room does not set falls back to the building's.
 *
 * @example
 * const resolve = boundsResolver([
 *   { buildingId: 'b', roomId: null, metric: 'temperature', bounds: { maxTemperature: 26, maxHumidity: 70 } },
 *   { buildingId: 'b', roomId: 'lab', metric: 'temperature', bounds: { maxTemperature: 22 } },
 * ]);
 * resolve('b', 'lab', 'temperature'); // { maxTemperature: 22, maxHumidity: 70 }
 */
export function boundsResolver(rows: readonly ThresholdRow[]): BoundsResolver {
  const building = new Map<string, Record<string, number>>();
  const room = new Map<string, Record<string, number>>();
  for (const row of rows) {
    if (row.roomId === null) building.set(JSON.stringify([row.buildingId, row.metric]), row.bounds);
    else room.set(JSON.stringify([row.buildingId, row.roomId, row.metric]), row.bounds);
  }
  return (buildingId, roomId, metric) => ({
    ...(building.get(JSON.stringify([buildingId, metric])) ?? {}),
    ...(room.get(JSON.stringify([buildingId, roomId, metric])) ?? {}),
  });
}

/** The value on the Kafka `alerts` topic (CONTRACTS.md). */
export interface AlertEvent {
  alertId: string;
  /** the metric key */
  type: string;
  field: string;
  buildingId: string;
  roomId: string;
  value: number;
  /** the bound key, e.g. maxTemperature */
  bound: string;
  threshold: number;
  /** the reading's timestamp, epoch ms */
  timestamp: number;
}

/**
 * A stable id for one bound breached by one reading: the same reading sent again (a retried batch, a
 * replayed gateway buffer) gives the same id, so the outbox stores it once and consumers de-duplicate.
 */
export function alertIdOf(reading: { buildingId: string; roomId: string; type: string; timestamp: number }, bound: string): string {
  return createHash('sha256')
    .update(JSON.stringify([reading.buildingId, reading.roomId, reading.type, reading.timestamp, bound]))
    .digest('hex')
    .slice(0, 32);
}

/** The Kafka message key: `{buildingId}:{roomId}`, so a room's alerts stay in order on one partition. */
export function alertKeyOf(alert: Pick<AlertEvent, 'buildingId' | 'roomId'>): string {
  return `${alert.buildingId}:${alert.roomId}`;
}

/** Every breach of every reading, as alert events. */
export function alertsOf(readings: readonly ValidReading[], resolve: BoundsResolver): AlertEvent[] {
  const out: AlertEvent[] = [];
  for (const { reading, metric } of readings) {
    if (metric.bounds.length === 0) continue;
    for (const breach of breachesOf(metric, reading, resolve(reading.buildingId, reading.roomId, metric.key))) {
      out.push({
        alertId: alertIdOf({ ...reading, type: metric.key }, breach.bound),
        type: metric.key,
        field: breach.field,
        buildingId: reading.buildingId,
        roomId: reading.roomId,
        value: breach.value,
        bound: breach.bound,
        threshold: breach.threshold,
        timestamp: reading.timestamp,
      });
    }
  }
  return out;
}
