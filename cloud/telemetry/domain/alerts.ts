/**
 * Threshold resolution and the alert events a batch raises.
 */
import { createHash } from 'node:crypto';
import type { AlertEvent } from '../../../shared/alert-event.js';
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
 * Resolves bounds with the room-level row winning (seed 002, reading storage 4): a room that has a row
 * of its own for the metric uses that row's bounds, whatever it holds; a room without one uses the
 * building's row. The stores seed a new room row from the building's bounds, so a room patched for one
 * bound keeps the building's others as they were at that moment.
 *
 * @example
 * const resolve = boundsResolver([
 *   { buildingId: 'b', roomId: null, metric: 'temperature', bounds: { maxTemperature: 26, maxHumidity: 70 } },
 *   { buildingId: 'b', roomId: 'lab', metric: 'temperature', bounds: { maxTemperature: 22 } },
 * ]);
 * resolve('b', 'lab', 'temperature'); // { maxTemperature: 22 }
 * resolve('b', 'hall', 'temperature'); // { maxTemperature: 26, maxHumidity: 70 }
 */
export function boundsResolver(rows: readonly ThresholdRow[]): BoundsResolver {
  const empty: Bounds = Object.freeze({});
  if (rows.length === 0) return () => empty;
  // building → metric → room ('' for the building itself) → bounds
  const table = new Map<string, Map<string, Map<string, Record<string, number>>>>();
  for (const row of rows) {
    let metrics = table.get(row.buildingId);
    if (!metrics) table.set(row.buildingId, (metrics = new Map()));
    let rooms = metrics.get(row.metric);
    if (!rooms) metrics.set(row.metric, (rooms = new Map()));
    rooms.set(row.roomId === null ? '' : `r:${row.roomId}`, row.bounds);
  }
  return (buildingId, roomId, metric) => {
    const rooms = table.get(buildingId)?.get(metric);
    if (!rooms) return empty;
    return rooms.get(`r:${roomId}`) ?? rooms.get('') ?? empty;
  };
}


/**
 * A stable id for one bound breached by one reading: the same reading sent again (a retried batch, a
 * replayed gateway buffer) gives the same id, so the outbox stores it once and consumers de-duplicate.
 * A zoneTransition's origin (`fromRoomId`) is part of its reading's key (decision 005), so it is part
 * of the id too: two transitions into one zone at one instant are two breaches. Readings without an
 * origin keep the ids they always had.
 */
export function alertIdOf(reading: { buildingId: string; roomId: string; type: string; timestamp: number; fromRoomId?: unknown }, bound: string): string {
  const key: unknown[] = [reading.buildingId, reading.roomId, reading.type, reading.timestamp, bound];
  if (typeof reading.fromRoomId === 'string') key.push(reading.fromRoomId);
  return createHash('sha256').update(JSON.stringify(key)).digest('hex').slice(0, 32);
}

/** The Kafka message key: `{buildingId}:{roomId}`, so a room's alerts stay in order on one partition. */
export function alertKeyOf(alert: Pick<AlertEvent, 'buildingId' | 'roomId'>): string {
  return `${alert.buildingId}:${alert.roomId}`;
}

/** An alert, with the position in its batch of the reading that raised it. */
export interface RaisedAlert {
  reading: number;
  alert: AlertEvent;
}

/** Every breach of every reading, as alert events. */
export function alertsOf(readings: readonly ValidReading[], resolve: BoundsResolver): RaisedAlert[] {
  const out: RaisedAlert[] = [];
  for (const [index, { reading, metric }] of readings.entries()) {
    if (metric.bounds.length === 0) continue;
    for (const breach of breachesOf(metric, reading, resolve(reading.buildingId, reading.roomId, metric.key))) {
      out.push({
        reading: index,
        alert: {
          alertId: alertIdOf({ ...reading, type: metric.key }, breach.bound),
          type: metric.key,
          field: breach.field,
          buildingId: reading.buildingId,
          roomId: reading.roomId,
          value: breach.value,
          bound: breach.bound,
          threshold: breach.threshold,
          timestamp: reading.timestamp,
        },
      });
    }
  }
  return out;
}
