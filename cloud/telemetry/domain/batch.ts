/**
 * An ingest batch `{batchId?, readings: [...]}`: its shape, then every reading against its metric
 * declaration. A batch is all-or-nothing, so every problem of every reading is reported at once.
 */
import type { MetricDeclaration } from '../../../shared/catalog/declaration.js';
import { MAX_READINGS_PER_BATCH, validateReading, type FieldError, type Reading } from '../../../shared/catalog/validate.js';
import { unknownKeyProblems } from '../../../shared/errors.js';
import { NAME_EXPECTATION, NonEmptyString, describeValue } from '../../../shared/kinds.js';
import { encodeReading } from './encoding.js';
import { DAY_MS, HOUR_MS } from './utc.js';

/** One problem of one reading; `index` is null for a problem of the batch itself. */
export interface ReadingError {
  index: number | null;
  field: string;
  message: string;
}

/** A reading that passed its declaration, with the declaration. */
export interface ValidReading {
  reading: Reading;
  metric: MetricDeclaration;
}

export interface BatchLimits {
  /** Above this many readings the batch is 413. CONTRACTS.md: 5,000. */
  maxReadings: number;
  /** Raw readings are kept this long; an older reading could not be stored. 14 days. */
  retentionMs: number;
  /** How far ahead of the service's clock a reading may be dated. */
  maxFutureMs: number;
}

export const DEFAULT_LIMITS: BatchLimits = { maxReadings: MAX_READINGS_PER_BATCH, retentionMs: 14 * DAY_MS, maxFutureMs: 24 * HOUR_MS };

/** Problems shown per answer; the count of the rest is still reported. */
export const MAX_REPORTED_ERRORS = 100;

export type BatchShape =
  | { ok: true; batchId: string | undefined; readings: unknown[] }
  | { ok: false; status: 400 | 413; message: string; errors: ReadingError[] };

/**
 * Checks the envelope: an object with a `readings` array of at most `maxReadings` entries and an
 * optional `batchId` (a non-empty string); no other key. The answer lists at most
 * {@link MAX_REPORTED_ERRORS} problems, and its message counts the unknown keys it leaves out.
 */
export function shapeOfBatch(body: unknown, limits: BatchLimits = DEFAULT_LIMITS): BatchShape {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return { ok: false, status: 400, message: 'expected a JSON object {batchId?, readings: [...]}', errors: [{ index: null, field: '(body)', message: `expected an object, got ${describeValue(body)}` }] };
  }
  const record = body as Record<string, unknown>;
  const errors: ReadingError[] = [];
  if (record.batchId !== undefined && !NonEmptyString.is(record.batchId)) {
    errors.push({ index: null, field: 'batchId', message: `expected ${NAME_EXPECTATION}, got ${describeValue(record.batchId)}` });
  }
  if (!Array.isArray(record.readings)) {
    errors.push({ index: null, field: 'readings', message: `expected an array of readings, got ${describeValue(record.readings)}` });
  } else if (record.readings.length > limits.maxReadings) {
    return {
      ok: false,
      status: 413,
      message: `a batch holds at most ${limits.maxReadings} readings, got ${record.readings.length}`,
      errors: [{ index: null, field: 'readings', message: `at most ${limits.maxReadings} readings` }],
    };
  } else if (record.readings.length === 0) {
    errors.push({ index: null, field: 'readings', message: 'expected at least one reading' });
  }
  const unknown = unknownEnvelopeKeyErrors(Object.keys(record), MAX_REPORTED_ERRORS - errors.length);
  if (unknown.errors.length > 0 || errors.length > 0) {
    const shown = unknown.notListed === 0 ? '' : ` (the first ${unknown.errors.length} of ${unknown.errors.length + unknown.notListed} unknown keys are listed)`;
    return { ok: false, status: 400, message: `the batch is malformed; nothing was stored${shown}`, errors: [...unknown.errors, ...errors] };
  }
  return { ok: true, batchId: record.batchId as string | undefined, readings: record.readings as unknown[] };
}

/**
 * One error per envelope key other than batchId and readings, for the first `max` of them, each key
 * cut as {@link unknownKeyProblems} cuts it: a body of thousands of keys, or of one very long key,
 * gets a short answer, never a larger one. `notListed` counts the unknown keys left out.
 */
function unknownEnvelopeKeyErrors(keys: readonly string[], max: number): { errors: ReadingError[]; notListed: number } {
  const unknown = keys.filter((key) => key !== 'batchId' && key !== 'readings');
  const described = unknownKeyProblems(unknown, (key) => key, max);
  return { errors: described.problems.map((field) => ({ index: null, field, message: 'not a batch field (batchId, readings)' })), notListed: described.notListed };
}

export type BatchValidation =
  | { ok: true; readings: ValidReading[] }
  | { ok: false; status: 400; message: string; errors: ReadingError[] };

/**
 * Validates every reading by its metric declaration, and its timestamp against what can be stored:
 * not older than the raw retention, not further ahead than `maxFutureMs`.
 *
 * @example
 * validateBatch([{ type: 'peopleCount', buildingId: 'b', roomId: 'r', timestamp: now, peopleCount: -1 }], now);
 * // { ok: false, status: 400, errors: [{ index: 0, field: 'peopleCount', message: 'expected a non-negative integer, got -1' }], ... }
 */
export function validateBatch(raw: readonly unknown[], now: number, limits: BatchLimits = DEFAULT_LIMITS): BatchValidation {
  const readings: ValidReading[] = [];
  const errors: ReadingError[] = [];
  const oldest = now - limits.retentionMs;
  const latest = now + limits.maxFutureMs;
  let invalid = 0;
  for (let index = 0; index < raw.length; index++) {
    const result = validateReading(raw[index]);
    let problems: readonly FieldError[];
    if (!result.ok) {
      problems = result.errors;
    } else if (result.reading.timestamp < oldest) {
      problems = [{ field: 'timestamp', message: `older than the ${Math.round(limits.retentionMs / DAY_MS)}-day raw retention, so it cannot be stored` }];
    } else if (result.reading.timestamp > latest) {
      problems = [{ field: 'timestamp', message: `more than ${Math.round(limits.maxFutureMs / HOUR_MS)} hours ahead of the service's clock; expected epoch milliseconds` }];
    } else {
      readings.push({ reading: result.reading, metric: result.metric });
      continue;
    }
    invalid += 1;
    for (const p of problems) if (errors.length < MAX_REPORTED_ERRORS) errors.push({ index, field: p.field, message: p.message });
  }
  if (invalid > 0) {
    const shown = errors.length < MAX_REPORTED_ERRORS ? '' : ` (the first ${MAX_REPORTED_ERRORS} problems are listed)`;
    return { ok: false, status: 400, message: `${invalid} of ${raw.length} readings are invalid; nothing was stored${shown}`, errors };
  }
  return { ok: true, readings };
}

/** A reading as a row: the key columns, the value, and every other declared field in the payload. */
export interface ReadingRow {
  buildingId: string;
  roomId: string;
  metric: string;
  /** epoch ms */
  ts: number;
  value: number;
  /** Every declared field present other than the columns and the value, as the JSON text of an object. */
  payload: string;
  /** The key's last column: a zoneTransition's origin zone (the payload's `fromRoomId`), '' for every other metric. */
  fromRoomId: string;
}

/** The row a valid reading is stored as. */
export function rowOf(valid: ValidReading): ReadingRow {
  return encodeReading(valid).row;
}
