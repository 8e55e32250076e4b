/**
 * Signal units. Every dialect's reading becomes dBm here, so that hysteresis compares like with like.
 */
import type { SignalUnit } from './dialects.js';

/** Below this a reading is noise or a filler value; at or above 0 dBm it is not a received Wi-Fi signal. */
const MIN_DBM = -120;
const MAX_DBM = 0;

/**
 * Converts a raw reading to dBm, or undefined when it cannot be a real signal (some APs report 0 or
 * absurd values for "unknown"; a row like that must not win "loudest AP").
 *
 * @example
 * toDbm(-52, { unit: 'dBm' }); // -52
 * toDbm(40, { unit: 'SNR', noiseFloorDbm: -95 }); // -55
 */
export function toDbm(raw: number, unit: SignalUnit): number | undefined {
  if (!Number.isFinite(raw)) return undefined;
  let dbm: number;
  if (unit.unit === 'SNR') {
    if (raw <= 0 || raw > 100) return undefined;
    dbm = unit.noiseFloorDbm + raw;
  } else {
    dbm = raw;
  }
  if (dbm < MIN_DBM || dbm >= MAX_DBM) return undefined;
  return dbm;
}
