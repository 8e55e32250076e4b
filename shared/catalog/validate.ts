/**
 * Checks readings and action arguments against their declarations, and finds threshold breaches.
 * The same field check serves ingest, device actions and the edge's reading builder.
 */
import { NAME_EXPECTATION, isName, kinds, describeValue } from '../kinds.js';
import type { ActionSpec, FieldSpec, MetricDeclaration } from './declaration.js';
import { metricOf, METRICS } from './metrics.js';

/**
 * The most readings one ingest batch may hold (CONTRACTS.md; a larger batch is refused whole with 413).
 * The edge splits a tick's readings into batches of at most this many.
 */
export const MAX_READINGS_PER_BATCH = 5000;

/** One problem with one field. */
export interface FieldError {
  field: string;
  message: string;
}

const kindWords: Record<string, string> = {
  NonEmptyString: NAME_EXPECTATION,
  Finite: 'a finite number',
  NonNegativeInt: 'a non-negative integer',
};

/**
 * Checks a record against field specs: every required field present, every present field of its kind,
 * and no undeclared field (so nothing unexpected, such as an identifier, rides along).
 *
 * @example
 * validateFields([{ name: 'target', kind: 'Finite', required: true }], { target: 'hot' });
 * // [{ field: 'target', message: 'expected a finite number, got "hot"' }]
 */
export function validateFields(
  specs: readonly FieldSpec[],
  input: Readonly<Record<string, unknown>>,
  ignore: readonly string[] = [],
): FieldError[] {
  const errors: FieldError[] = [];
  for (const spec of specs) {
    const value = input[spec.name];
    if (value === undefined || value === null) {
      if (spec.required) errors.push({ field: spec.name, message: `required, expected ${kindWords[spec.kind]}` });
      continue;
    }
    if (!(kinds[spec.kind] as { is(u: unknown): boolean }).is(value)) {
      errors.push({ field: spec.name, message: `expected ${kindWords[spec.kind]}, got ${describeValue(value)}` });
    }
  }
  // Declarations hold a handful of fields: a scan allocates nothing, unlike a Set built per call.
  for (const name of Object.keys(input)) {
    if (!isDeclared(specs, name) && !ignore.includes(name)) {
      errors.push({ field: name, message: 'not a declared field of this metric' });
    }
  }
  return errors;
}

function isDeclared(specs: readonly FieldSpec[], name: string): boolean {
  for (const spec of specs) if (spec.name === name) return true;
  return false;
}

/**
 * A name of printable ASCII whose first character is not a space: a NonEmptyString without looking
 * further (no control character, no surrogate, not blank). Names of any other form take the full rule.
 */
const PLAIN_NAME = /^[\x21-\x7e][\x20-\x7e]{0,255}$/;

/** The check of one present value against its kind, as the kind's codec decides it. */
function isOfKind(kind: FieldSpec['kind'], value: unknown): boolean {
  switch (kind) {
    case 'NonEmptyString':
      return typeof value === 'string' && (PLAIN_NAME.test(value) || isName(value));
    case 'Finite':
      return typeof value === 'number' && Number.isFinite(value);
    case 'NonNegativeInt':
      return Number.isSafeInteger(value) && (value as number) >= 0;
    default:
      return (kinds[kind as keyof typeof kinds] as { is(u: unknown): boolean }).is(value);
  }
}

/**
 * Whether {@link validateFields} would find no problem, answered without building any: the common
 * input passes here, and only an input this refuses is checked again to say what is wrong. It never
 * accepts what validateFields refuses (a for…in walk sees every own key Object.keys lists).
 */
export function conformsToFields(specs: readonly FieldSpec[], input: Readonly<Record<string, unknown>>, ignored?: string): boolean {
  for (const spec of specs) {
    const value = input[spec.name];
    if (value === undefined || value === null) {
      if (spec.required) return false;
    } else if (!isOfKind(spec.kind, value)) {
      return false;
    }
  }
  for (const name in input) {
    if (name !== ignored && !isDeclared(specs, name)) return false;
  }
  return true;
}

/** A reading that passed validation. */
export interface Reading {
  type: string;
  buildingId: string;
  roomId: string;
  timestamp: number;
  [field: string]: string | number;
}

export type ReadingResult =
  | { ok: true; reading: Reading; metric: MetricDeclaration }
  | { ok: false; errors: FieldError[] };

/**
 * Validates one reading `{type, ...declared fields}` against the declaration named by `type`.
 *
 * @example
 * validateReading({ type: 'peopleCount', buildingId: 'b1', roomId: 'r1', timestamp: 1700000000000, peopleCount: 4 });
 * // { ok: true, reading: {...}, metric: peopleCount }
 */
export function validateReading(input: unknown): ReadingResult {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return { ok: false, errors: [{ field: '(reading)', message: `expected an object, got ${describeValue(input)}` }] };
  }
  const record = input as Record<string, unknown>;
  if (typeof record.type !== 'string') {
    return { ok: false, errors: [{ field: 'type', message: `expected a metric key, got ${describeValue(record.type)}` }] };
  }
  const metric = metricOf(record.type);
  if (!metric) {
    return {
      ok: false,
      errors: [{ field: 'type', message: `unregistered metric ${describeValue(record.type)}; known: ${Object.keys(METRICS).join(', ')}` }],
    };
  }
  if (conformsToFields(metric.fields, record, 'type')) return { ok: true, reading: record as Reading, metric };
  const errors = validateFields(metric.fields, record, ['type']);
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, reading: record as Reading, metric };
}

export type ArgumentsResult =
  | { ok: true; metric: MetricDeclaration; action: ActionSpec }
  | { ok: false; reason: 'unknown_metric' | 'unknown_action' | 'invalid_arguments'; message: string; errors: FieldError[] };

/**
 * Validates an action's named arguments with the same field check ingest uses. An empty parameter list
 * with an empty argument map yields no errors.
 *
 * @example
 * validateActionArguments('temperature', 'setTarget', { target: 21.5 }); // { ok: true, ... }
 * validateActionArguments('temperature', 'fly', {}); // { ok: false, reason: 'unknown_action', ... }
 */
export function validateActionArguments(metricKey: string, actionName: string, args: unknown): ArgumentsResult {
  const metric = metricOf(metricKey);
  if (!metric) return { ok: false, reason: 'unknown_metric', message: `unknown metric ${describeValue(metricKey)}`, errors: [] };
  const action = metric.actions.find((a) => a.name === actionName);
  if (!action) {
    return { ok: false, reason: 'unknown_action', message: `metric ${metric.key} declares no action ${describeValue(actionName)}`, errors: [] };
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    return { ok: false, reason: 'invalid_arguments', message: 'arguments must be an object', errors: [] };
  }
  const errors = validateFields(action.parameters, args as Record<string, unknown>);
  if (errors.length > 0) return { ok: false, reason: 'invalid_arguments', message: 'invalid action arguments', errors };
  return { ok: true, metric, action };
}

/** Bound values by bound key, e.g. `{ maxTemperature: 26 }`. */
export type Bounds = Readonly<Record<string, number>>;

/** A reading over one of its bounds. */
export interface Breach {
  type: string;
  field: string;
  bound: string;
  threshold: number;
  value: number;
}

/**
 * The bounds a reading breaches: an `Above` bound is breached by a value strictly over it.
 *
 * @example
 * breachesOf(temperature, { ...reading, temperature: 30 }, { maxTemperature: 26 });
 * // [{ type: 'temperature', field: 'temperature', bound: 'maxTemperature', threshold: 26, value: 30 }]
 */
export function breachesOf(metric: MetricDeclaration, reading: Readonly<Record<string, unknown>>, bounds: Bounds): Breach[] {
  const out: Breach[] = [];
  for (const spec of metric.bounds) {
    const threshold = bounds[spec.key];
    const value = reading[spec.field];
    if (typeof threshold !== 'number' || typeof value !== 'number') continue;
    if (spec.direction === 'Above' && value > threshold) {
      out.push({ type: metric.key, field: spec.field, bound: spec.key, threshold, value });
    }
  }
  return out;
}

/** The catalog entry served by GET /contracts. */
export function contractOf(metric: MetricDeclaration) {
  return {
    key: metric.key,
    label: metric.label,
    interfaceName: metric.interface_name,
    valueField: metric.value_field,
    unit: metric.unit ?? null,
    fields: metric.fields,
    bounds: metric.bounds,
    actions: metric.actions,
  };
}

/** The declared fields of a reading only: what browsers see on `telemetry:filtered:{buildingId}`. */
export function declaredView(metric: MetricDeclaration, reading: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = { type: metric.key };
  for (const f of metric.fields) if (reading[f.name] !== undefined) out[f.name] = reading[f.name];
  return out;
}
