/**
 * One tick's readings, built from aggregates only and checked against the shared metric catalog before
 * anything is sent. Body shapes follow the catalog: `{type, ...declared fields}`.
 */
import { validateReading, type FieldError, type Reading } from '../../../shared/catalog/validate.js';
import type { ZonePairCount } from '../zones/types.js';

export interface ZoneSettings {
  id: string;
  /** Devices per person; when set, the zone also gets ratioDeviceCount. */
  devicesPerPerson?: number;
}

export interface TickAggregates {
  buildingId: string;
  /** Epoch ms of the tick. */
  timestamp: number;
  zones: readonly ZoneSettings[];
  /** Devices counted per zone (each device once, in its own zone). */
  counts: Readonly<Record<string, number>>;
  /** Moves per zone pair over the transition window. */
  transitions: readonly ZonePairCount[];
  /** Stations each AP that answered carries (no deduplication: an AP's own view). */
  apClients: ReadonlyArray<{ ap: string; stations: number }>;
}

export interface BuiltReadings {
  readings: Reading[];
  /** Readings the catalog refused; they are not sent. */
  refused: Array<{ type: string; roomId: string; errors: FieldError[] }>;
}

/**
 * Estimated people from devices: rounded up, so one device is one person; an empty zone is 0.
 *
 * @example
 * peopleFromDevices(5, 1.6); // 4
 */
export function peopleFromDevices(devices: number, devicesPerPerson: number): number {
  if (devices <= 0) return 0;
  return Math.ceil(devices / devicesPerPerson - 1e-9);
}

/** The only metrics the collector sends: what the audit lets leave the gateway. */
export const COLLECTOR_METRICS: ReadonlySet<string> = new Set(['totalDeviceCount', 'ratioDeviceCount', 'zoneTransition', 'apClients']);

/**
 * Builds and validates one tick's readings:
 * - totalDeviceCount for every zone;
 * - ratioDeviceCount only for zones with devicesPerPerson;
 * - zoneTransition per (from, to) pair, roomId being the destination;
 * - apClients per AP that answered, with the AP name in roomId.
 */
export function buildReadings(tick: TickAggregates): BuiltReadings {
  const { buildingId, timestamp } = tick;
  const candidates: Array<Record<string, unknown>> = [];
  for (const zone of tick.zones) {
    const devices = tick.counts[zone.id] ?? 0;
    candidates.push({ type: 'totalDeviceCount', buildingId, roomId: zone.id, timestamp, totalDeviceCount: devices });
    if (zone.devicesPerPerson !== undefined) {
      candidates.push({ type: 'ratioDeviceCount', buildingId, roomId: zone.id, timestamp, ratioDeviceCount: peopleFromDevices(devices, zone.devicesPerPerson) });
    }
  }
  for (const pair of tick.transitions) {
    candidates.push({ type: 'zoneTransition', buildingId, roomId: pair.to, fromRoomId: pair.from, timestamp, zoneTransition: pair.count });
  }
  for (const { ap, stations } of tick.apClients) {
    candidates.push({ type: 'apClients', buildingId, roomId: ap, timestamp, apClients: stations });
  }
  const readings: Reading[] = [];
  const refused: BuiltReadings['refused'] = [];
  for (const candidate of candidates) {
    const result = validateReading(candidate);
    if (result.ok) readings.push(result.reading);
    else refused.push({ type: String(candidate.type), roomId: String(candidate.roomId), errors: result.errors });
  }
  return { readings, refused };
}

/**
 * The batch id: the building and the tick's time, readable by an auditor and unique per tick.
 *
 * @example
 * batchIdOf('hq', 1763838254000); // 'hq@2025-11-22T19:04:14.000Z'
 */
export function batchIdOf(buildingId: string, timestamp: number): string {
  return `${buildingId}@${new Date(timestamp).toISOString()}`;
}

/** The exact bytes that are signed, posted and kept in the ledger. */
export function encodeBatch(batchId: string, readings: readonly Reading[]): string {
  return JSON.stringify({ batchId, readings });
}
