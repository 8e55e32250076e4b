/**
 * UTC calendar arithmetic for partitions and hourly buckets. Everything is UTC: a +05:30 or a DST
 * time zone on the database, the host or the gateway never moves a partition or an hour.
 */

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/** The start of the UTC hour holding `ms`. */
export function floorHour(ms: number): number {
  return Math.floor(ms / HOUR_MS) * HOUR_MS;
}

/** The start of the UTC day holding `ms`. */
export function floorDay(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

/** The partition of a day: `readings_p20240331` for any instant of 2024-03-31 UTC. */
export function partitionNameOf(ms: number): string {
  const day = new Date(floorDay(ms));
  const yyyy = String(day.getUTCFullYear()).padStart(4, '0');
  const mm = String(day.getUTCMonth() + 1).padStart(2, '0');
  const dd = String(day.getUTCDate()).padStart(2, '0');
  return `readings_p${yyyy}${mm}${dd}`;
}

const PARTITION_NAME = /^readings_p(\d{4})(\d{2})(\d{2})$/;

/** The UTC day a partition name covers, as [start, end) in ms, or undefined for another name. */
export function dayOfPartition(name: string): { start: number; end: number } | undefined {
  const m = PARTITION_NAME.exec(name);
  if (!m) return undefined;
  const start = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  if (Number.isNaN(start) || partitionNameOf(start) !== name) return undefined;
  return { start, end: start + DAY_MS };
}

/** An ISO-8601 UTC literal (`…Z`), unambiguous whatever the session's TimeZone. */
export function isoUtc(ms: number): string {
  return new Date(ms).toISOString();
}

export interface PartitionFacts {
  /** Every hour before it has been rolled up; null when nothing has been yet. */
  watermark: number | null;
  /** Hours before the watermark that got late readings and wait to be rolled up again. */
  pendingHours: readonly number[];
}

/**
 * The day partitions the retention job may drop: whole days older than the raw retention, every hour
 * of which is rolled up (before the watermark, none pending). An hour that has not been rolled up is
 * never dropped.
 *
 * @example
 * droppablePartitions(['readings_p20240301'], Date.parse('2024-03-20T00:00Z'), 14 * DAY_MS, { watermark: Date.parse('2024-03-20T00:00Z'), pendingHours: [] });
 * // ['readings_p20240301']
 */
export function droppablePartitions(names: readonly string[], now: number, retentionMs: number, facts: PartitionFacts): string[] {
  const horizon = now - retentionMs;
  return names.filter((name) => {
    const day = dayOfPartition(name);
    if (!day || day.end > horizon) return false;
    if (facts.watermark === null || day.end > facts.watermark) return false;
    return !facts.pendingHours.some((hour) => hour >= day.start && hour < day.end);
  });
}
