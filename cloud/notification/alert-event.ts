/**
 * The alert event on the Kafka `alerts` topic, and what the breach path makes of it: its cooldown key,
 * the key that marks its alertId seen, and the in-app notification it becomes.
 */
import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import type { ReceivedAlert } from '../../shared/alert-event.js';
import { metricOf } from '../../shared/catalog/metrics.js';
import { MAX_NAME_LENGTH, describeValue, isName } from '../../shared/kinds.js';
import type { Notification } from '../../shared/notification.js';

export type ParsedAlert = { ok: true; alert: ReceivedAlert } | { ok: false; reason: string };

const MAX_RECORD_BYTES = 64 * 1024;

const REQUIRED = ['alertId', 'type', 'field', 'buildingId', 'roomId'] as const;

/**
 * Telemetry's rule for a name (NonEmptyString). A lone surrogate is encoded as U+FFFD on its way to
 * Redis, so `b\udc00` and `b\udfff` would share one cooldown key and one would suppress the other.
 */
function requiredName(record: Record<string, unknown>, key: string): string | undefined {
  const value = record[key];
  return typeof value === 'string' && isName(value) ? value : undefined;
}

function optional<T>(record: Record<string, unknown>, key: string, kind: 'string' | 'number'): T | null | undefined | false {
  const value = record[key];
  if (value === undefined || value === null) return value as null | undefined;
  return typeof value === kind ? (value as T) : false;
}

/**
 * Parses a Kafka record value. Never throws; anything unusable gives a reason. Checked by hand rather
 * than with io-ts: this runs for every record of the topic.
 *
 * @example
 * parseAlertRecord(Buffer.from('{"alertId":"a1","type":"temperature","field":"temperature","buildingId":"b1","roomId":"r1"}'));
 */
export function parseAlertRecord(value: Buffer | null): ParsedAlert {
  if (value === null || value.length === 0) return { ok: false, reason: 'empty record' };
  if (value.length > MAX_RECORD_BYTES) return { ok: false, reason: `record larger than ${MAX_RECORD_BYTES} bytes` };
  // Decoded leniently, bytes that are not UTF-8 would become U+FFFD, and two ids would become one.
  if (!isUtf8(value)) return { ok: false, reason: 'record is not UTF-8' };
  let json: unknown;
  try {
    json = JSON.parse(value.toString('utf8'));
  } catch {
    return { ok: false, reason: 'record is not JSON' };
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return { ok: false, reason: 'record is not a JSON object' };
  const record = json as Record<string, unknown>;
  const alertId = requiredName(record, 'alertId');
  const type = requiredName(record, 'type');
  const field = requiredName(record, 'field');
  const buildingId = requiredName(record, 'buildingId');
  const roomId = requiredName(record, 'roomId');
  if (alertId === undefined || type === undefined || field === undefined || buildingId === undefined || roomId === undefined) {
    const bad = REQUIRED.filter((key) => requiredName(record, key) === undefined);
    return { ok: false, reason: bad.map((key) => `${key}: expected a non-empty string of at most ${MAX_NAME_LENGTH} characters, without NUL (\\u0000), other control characters or lone surrogates, got ${describeValue(record[key])}`).join('; ') };
  }
  const alert: ReceivedAlert = { alertId, type, field, buildingId, roomId };
  const reading = optional<number>(record, 'value', 'number');
  const bound = optional<string>(record, 'bound', 'string');
  const threshold = optional<number>(record, 'threshold', 'number');
  if (reading === false || bound === false || threshold === false) {
    return { ok: false, reason: 'bound must be a string, value and threshold numbers, when present' };
  }
  if (reading !== undefined) alert.value = reading;
  if (bound !== undefined) alert.bound = bound;
  if (threshold !== undefined) alert.threshold = threshold;
  return { ok: true, alert };
}

/** A character that would let one part of a cooldown key run into the next, or fake an escape. */
const KEY_SPECIAL = /[%:]/;

/**
 * A name as a part of a cooldown key: `%` as `%25`, then `:` as `%3A`. Names may hold both (a room
 * `hq:lab` of building `acme` would otherwise share the key of room `lab` of building `acme:hq`, and
 * suppress another tenant's alerts); any other name is itself, so its key is the seed's.
 */
function keyPart(name: string): string {
  return KEY_SPECIAL.test(name) ? name.replaceAll('%', '%25').replaceAll(':', '%3A') : name;
}

/**
 * `alert:{type}:{field}:{buildingId}:{roomId}`: one delivery per key every 300 s, across replicas.
 * Each part is escaped ({@link keyPart}), so two different alerts never share a key; for names without
 * `:` or `%` (every catalog type and field) the key is exactly the seed's.
 *
 * @example
 * cooldownKey({ type: 'temperature', field: 'temperature', buildingId: 'b1', roomId: 'r1' }); // 'alert:temperature:temperature:b1:r1'
 * cooldownKey({ type: 'temperature', field: 'temperature', buildingId: 'acme', roomId: 'hq:lab' }); // 'alert:temperature:temperature:acme:hq%3Alab'
 */
export function cooldownKey(alert: Pick<ReceivedAlert, 'type' | 'field' | 'buildingId' | 'roomId'>): string {
  return `alert:${keyPart(alert.type)}:${keyPart(alert.field)}:${keyPart(alert.buildingId)}:${keyPart(alert.roomId)}`;
}

/** `alert-seen:{alertId}`: set when an alert is first settled, so a resend or redelivery is a duplicate. */
export function seenKey(alert: Pick<ReceivedAlert, 'alertId'>): string {
  return `alert-seen:${alert.alertId}`;
}

/** A Web Push topic (at most 32 URL-safe characters) so a newer alert replaces an undelivered one. */
export function pushTopicOf(key: string): string {
  return createHash('sha256').update(key).digest('base64url').slice(0, 32);
}

function formatNumber(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(Math.abs(value) < 10 ? 2 : 1).replace(/0+$/, '').replace(/\.$/, '');
}

/**
 * The in-app notification for a breach, scoped to a domain or unscoped.
 *
 * @example
 * alertNotification(alert, { id: 'n1', createdAt: '2026-01-01T00:00:00.000Z', domainName: 'acme' });
 * // { kind: 'alert', severity: 'warning', title: 'Temperature alert', message: 'Maximum temperature exceeded …', … }
 */
export function alertNotification(alert: Omit<ReceivedAlert, 'alertId'>, options: { id: string; createdAt: string; domainName?: string }): Notification {
  const metric = metricOf(alert.type);
  const bound = metric?.bounds.find((b) => b.key === alert.bound) ?? metric?.bounds.find((b) => b.field === alert.field);
  const unit = bound?.unit ?? metric?.unit;
  const withUnit = (n: number) => (unit ? `${formatNumber(n)} ${unit}` : formatNumber(n));
  let message = `${bound?.label ?? `${alert.field} limit`} exceeded in room ${alert.roomId} of building ${alert.buildingId}`;
  if (typeof alert.value === 'number' && Number.isFinite(alert.value)) {
    message += `: ${withUnit(alert.value)}`;
    if (typeof alert.threshold === 'number' && Number.isFinite(alert.threshold)) message += ` (limit ${withUnit(alert.threshold)})`;
  }
  const notification: Notification = {
    id: options.id,
    kind: 'alert',
    severity: 'warning',
    title: `${metric?.label ?? alert.type} alert`,
    message,
    buildingId: alert.buildingId,
    roomId: alert.roomId,
    metric: alert.type,
    field: alert.field,
    createdAt: options.createdAt,
  };
  if (options.domainName !== undefined) notification.domainName = options.domainName;
  return notification;
}
