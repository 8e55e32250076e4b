/**
 * Threshold edit bodies, checked in full before anything is written:
 * - PATCH /thresholds/{metric}/buildings/{id}/rooms: `{<roomId>: {<boundKey>: number|null}}`
 * - PUT /thresholds/buildings/{id}: `{<metric>: {<boundKey>: number|null}}`
 * A number sets the bound, null clears it, and a bound not named is left as it is.
 */
import type { MetricDeclaration } from '../../../shared/catalog/declaration.js';
import { metricOf, METRICS } from '../../../shared/catalog/metrics.js';
import { NAME_EXPECTATION, NonEmptyString, describeValue } from '../../../shared/kinds.js';
import { MAX_REPORTED_ERRORS } from './batch.js';

/** What one edit does to one row. */
export interface BoundsPatch {
  set: Record<string, number>;
  clear: string[];
}

/** One problem: `scope` is the room id (PATCH) or the metric key (PUT). */
export interface ThresholdError {
  scope: string;
  field: string;
  message: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string; errors: ThresholdError[] };

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Checks `{<boundKey>: number|null}` against a metric's declared bounds. */
export function parseBoundsPatch(metric: MetricDeclaration, scope: string, input: unknown, errors: ThresholdError[]): BoundsPatch {
  const patch: BoundsPatch = { set: {}, clear: [] };
  if (!isObject(input)) {
    errors.push({ scope, field: '(bounds)', message: `expected an object of bound key → number or null, got ${describeValue(input)}` });
    return patch;
  }
  const declared = new Set(metric.bounds.map((b) => b.key));
  if (Object.keys(input).length === 0) errors.push({ scope, field: '(bounds)', message: 'expected at least one bound' });
  for (const [key, value] of Object.entries(input)) {
    if (!declared.has(key)) {
      errors.push({ scope, field: key, message: `not a bound of ${metric.key}; bounds: ${[...declared].join(', ') || 'none'}` });
    } else if (value === null) {
      patch.clear.push(key);
    } else if (typeof value === 'number' && Number.isFinite(value)) {
      patch.set[key] = value;
    } else {
      errors.push({ scope, field: key, message: `expected a finite number or null, got ${describeValue(value)}` });
    }
  }
  return patch;
}

/**
 * A refused patch: the message, saying when only the first {@link MAX_REPORTED_ERRORS} problems are
 * listed (as for readings), and those problems, each scope (caller input) cut at 64 characters.
 */
function refused(message: string, errors: readonly ThresholdError[]): { ok: false; message: string; errors: ThresholdError[] } {
  return {
    ok: false,
    message: errors.length > MAX_REPORTED_ERRORS ? `${message} (the first ${MAX_REPORTED_ERRORS} of ${errors.length} problems are listed)` : message,
    errors: errors.slice(0, MAX_REPORTED_ERRORS).map((e) => (e.scope.length > 64 ? { ...e, scope: `${e.scope.slice(0, 64)}…` } : e)),
  };
}

/**
 * Parses a PATCH body for one metric: room id → bounds patch.
 *
 * @example
 * parseRoomsPatch(temperature, { r1: { maxTemperature: 26 }, r2: { maxTemperature: null } });
 * // { ok: true, value: [{ roomId: 'r1', patch: { set: { maxTemperature: 26 }, clear: [] } }, { roomId: 'r2', patch: { set: {}, clear: ['maxTemperature'] } }] }
 */
export function parseRoomsPatch(metric: MetricDeclaration, body: unknown): Parsed<Array<{ roomId: string; patch: BoundsPatch }>> {
  if (!isObject(body) || Object.keys(body).length === 0) {
    return { ok: false, message: 'expected a JSON object {<roomId>: {<boundKey>: number|null}} naming at least one room', errors: [] };
  }
  const errors: ThresholdError[] = [];
  const rooms = Object.entries(body).map(([roomId, bounds]) => {
    if (!NonEmptyString.is(roomId)) errors.push({ scope: roomId, field: '(room)', message: `a room id is ${NAME_EXPECTATION}` });
    return { roomId, patch: parseBoundsPatch(metric, roomId, bounds, errors) };
  });
  if (errors.length > 0) return refused(`${new Set(errors.map((e) => e.scope)).size} of ${rooms.length} rooms have invalid bounds; nothing was stored`, errors);
  return { ok: true, value: rooms };
}

/**
 * Parses a PUT body: metric key → building-level bounds patch.
 *
 * @example
 * parseBuildingPut({ airQuality: { maxCo2: 1000 } }); // { ok: true, value: [{ metric: 'airQuality', patch: ... }] }
 */
export function parseBuildingPut(body: unknown): Parsed<Array<{ metric: string; patch: BoundsPatch }>> {
  if (!isObject(body) || Object.keys(body).length === 0) {
    return { ok: false, message: 'expected a JSON object {<metric>: {<boundKey>: number|null}} naming at least one metric', errors: [] };
  }
  const errors: ThresholdError[] = [];
  const metrics: Array<{ metric: string; patch: BoundsPatch }> = [];
  for (const [key, bounds] of Object.entries(body)) {
    const metric = metricOf(key);
    if (!metric) {
      errors.push({ scope: key, field: '(metric)', message: `unknown metric; known: ${Object.keys(METRICS).join(', ')}` });
      continue;
    }
    metrics.push({ metric: metric.key, patch: parseBoundsPatch(metric, key, bounds, errors) });
  }
  if (errors.length > 0) return refused('invalid thresholds; nothing was stored', errors);
  return { ok: true, value: metrics };
}
