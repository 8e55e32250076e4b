/**
 * The privacy audit of exported bodies: proves every byte is an aggregate. A body passes only when
 * - it is canonical JSON (exactly what JSON.stringify gives back), so no duplicate key, escape or
 *   whitespace can hide bytes that a parser would not show;
 * - it is `{batchId, readings}`, and every reading is one of the collector's own metrics (device counts,
 *   estimated people, zone transitions, stations per AP) with only its declared fields;
 * - no key or string anywhere looks like an identifier (MAC in any spelling, IP address, local host name,
 *   UUID, 16+ hex, base64);
 * - every number is a plausible aggregate (counts up to a million, timestamps between 2000 and 2100).
 */
import { CONTROL_CHARACTERS } from '../../../shared/kinds.js';
import { metricOf } from '../../../shared/catalog/metrics.js';
import { validateReading } from '../../../shared/catalog/validate.js';
import { IDENTIFIER_WORDS, identifierKind, masked } from './identifiers.js';
import { COLLECTOR_METRICS } from './readings.js';

export type FindingKind = 'not-json' | 'not-canonical' | 'unexpected-key' | 'identifier' | 'invalid-reading' | 'implausible-number';

export interface AuditFinding {
  kind: FindingKind;
  /**
   * Where in the body, e.g. `readings[3].roomId`; a key other than letters, digits, `_`, `$` and `-` is
   * JSON-quoted with every control character escaped (`readings[0]."\u001b[8m"`), so a path printed on
   * the auditor's terminal is read, not obeyed.
   */
  path: string;
  /** What is wrong; never the identifier itself. */
  detail: string;
}

const MAX_COUNT = 1_000_000;
const MIN_TIMESTAMP = Date.UTC(2000, 0, 1);
const MAX_TIMESTAMP = Date.UTC(2100, 0, 1);
const BATCH_KEYS = new Set(['batchId', 'readings']);

function scanString(value: string, path: string, what: 'key' | 'value', findings: AuditFinding[]): void {
  const kind = identifierKind(value);
  if (kind) findings.push({ kind: 'identifier', path, detail: `${what} ${masked(value)} looks like ${IDENTIFIER_WORDS[kind]}` });
}

/** A key named as it is in a path: the spelling of a declared field, with nothing to quote. */
const PLAIN_KEY = /^[A-Za-z0-9_$-]+$/;

const CONTROL_CHARACTER = new RegExp(CONTROL_CHARACTERS.source, 'g');

/**
 * A key as JSON spells it, with the control characters JSON.stringify leaves as they are (DEL, C1 such as
 * U+009B, which a terminal takes for `ESC [`, U+2028 and U+2029) escaped too.
 */
const quotedKey = (key: string): string =>
  JSON.stringify(key).replace(CONTROL_CHARACTER, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/**
 * A key as a finding's path names it: masked when the key itself looks like an identifier, quoted when it
 * is not plain. A body is whatever was in the ledger file, so a key may be made to command the terminal
 * the audit is read on (`ESC [8m` hides what follows, the verdict included).
 */
const keyInPath = (key: string): string => (identifierKind(key) ? `[key ${masked(key)}]` : PLAIN_KEY.test(key) ? key : quotedKey(key));

/** `parent.key`, or the key alone at the top. */
const pathOf = (parent: string, key: string): string => (parent ? `${parent}.${keyInPath(key)}` : keyInPath(key));

/** Every key and string in any JSON value, scanned for identifiers. */
function walk(value: unknown, path: string, findings: AuditFinding[]): void {
  if (typeof value === 'string') scanString(value, path, 'value', findings);
  else if (Array.isArray(value)) value.forEach((item, i) => walk(item, `${path}[${i}]`, findings));
  else if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      const at = pathOf(path, key);
      scanString(key, at, 'key', findings);
      walk(inner, at, findings);
    }
  }
}

function checkReading(reading: unknown, path: string, findings: AuditFinding[]): void {
  if (reading === null || typeof reading !== 'object' || Array.isArray(reading)) {
    findings.push({ kind: 'invalid-reading', path, detail: 'a reading must be an object' });
    return;
  }
  const record = reading as Record<string, unknown>;
  const metric = typeof record.type === 'string' ? metricOf(record.type) : undefined;
  if (!metric) {
    findings.push({ kind: 'invalid-reading', path: `${path}.type`, detail: 'not a metric of the catalog' });
    return;
  }
  if (!COLLECTOR_METRICS.has(metric.key)) {
    findings.push({ kind: 'invalid-reading', path: `${path}.type`, detail: `${metric.key} is not a metric the collector sends (only ${[...COLLECTOR_METRICS].join(', ')})` });
    return;
  }
  const declared = new Set(['type', ...metric.fields.map((f) => f.name)]);
  for (const key of Object.keys(record)) {
    if (!declared.has(key)) findings.push({ kind: 'unexpected-key', path: pathOf(path, key), detail: `not a declared field of ${metric.key}` });
  }
  const result = validateReading(record);
  if (!result.ok) {
    for (const e of result.errors) {
      if (!declared.has(e.field)) continue; // already reported as an unexpected key
      findings.push({ kind: 'invalid-reading', path: `${path}.${e.field}`, detail: e.message.replace(/, got .*$/, '') });
    }
  }
  for (const field of metric.fields) {
    const value = record[field.name];
    if (typeof value !== 'number') continue;
    if (field.name === 'timestamp') {
      if (!(value >= MIN_TIMESTAMP && value <= MAX_TIMESTAMP)) findings.push({ kind: 'implausible-number', path: `${path}.timestamp`, detail: 'not a time between 2000 and 2100' });
    } else if (field.kind !== 'NonNegativeInt' || value > MAX_COUNT) {
      findings.push({ kind: 'implausible-number', path: `${path}.${field.name}`, detail: `only counts up to ${MAX_COUNT} are plausible aggregates` });
    }
  }
}

/**
 * Audits one exported body. No findings means every byte of it is an aggregate.
 *
 * @example
 * auditBody('{"batchId":"hq@2026-01-01T00:00:00.000Z","readings":[]}'); // []
 */
export function auditBody(body: string): AuditFinding[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [{ kind: 'not-json', path: '(body)', detail: 'not valid JSON' }];
  }
  const findings: AuditFinding[] = [];
  if (JSON.stringify(parsed) !== body) {
    findings.push({ kind: 'not-canonical', path: '(body)', detail: 'not canonical JSON: it has bytes (whitespace, escapes or duplicate keys) a parser does not show' });
  }
  walk(parsed, '', findings);
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    findings.push({ kind: 'unexpected-key', path: '(body)', detail: 'a batch must be an object {batchId, readings}' });
    return findings;
  }
  const batch = parsed as Record<string, unknown>;
  for (const key of Object.keys(batch)) {
    if (!BATCH_KEYS.has(key)) findings.push({ kind: 'unexpected-key', path: pathOf('', key), detail: 'a batch holds only batchId and readings' });
  }
  if (batch.batchId !== undefined && typeof batch.batchId !== 'string') findings.push({ kind: 'invalid-reading', path: 'batchId', detail: 'must be a string' });
  if (!Array.isArray(batch.readings)) findings.push({ kind: 'invalid-reading', path: 'readings', detail: 'must be a list of readings' });
  else batch.readings.forEach((reading, i) => checkReading(reading, `readings[${i}]`, findings));
  return findings;
}
