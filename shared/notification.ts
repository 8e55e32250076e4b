/**
 * The shared notification schema carried on the Redis `notifications` channel. The relay routes only
 * what parses as this schema, so a renamed domain field can never turn a scoped alert into a broadcast.
 */
import * as t from 'io-ts';
import { decode } from './kinds.js';

export const Severity = t.keyof({ info: null, warning: null, danger: null }, 'Severity');
export type Severity = t.TypeOf<typeof Severity>;

export const NotificationKind = t.keyof({ alert: null, manual: null }, 'NotificationKind');

export const Notification = t.exact(
  t.intersection([
    t.type({
      id: t.string,
      kind: NotificationKind,
      severity: Severity,
      title: t.string,
      message: t.string,
      buildingId: t.string,
      createdAt: t.string,
    }),
    t.partial({
      roomId: t.string,
      metric: t.string,
      field: t.string,
      domainName: t.string,
    }),
  ]),
  'Notification',
);
export type Notification = t.TypeOf<typeof Notification>;

const KNOWN_KEYS = new Set(['id', 'kind', 'severity', 'title', 'message', 'buildingId', 'createdAt', 'roomId', 'metric', 'field', 'domainName']);

export type NotificationResult = { ok: true; notification: Notification } | { ok: false; errors: string[] };

/**
 * Parses a broker payload as a notification. Unknown keys are refused, not dropped: a payload with
 * `domain` or `domainId` instead of `domainName` must not be routed as system-wide.
 *
 * @example
 * parseNotification('{"id":"n1","kind":"manual","severity":"info","title":"t","message":"m","buildingId":"b1","createdAt":"2026-01-01T00:00:00Z"}');
 * // { ok: true, notification: {...} } — no domainName, so a broadcast
 */
export function parseNotification(payload: string | unknown): NotificationResult {
  let value: unknown = payload;
  if (typeof payload === 'string') {
    try {
      value = JSON.parse(payload);
    } catch {
      return { ok: false, errors: ['payload is not valid JSON'] };
    }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { ok: false, errors: ['payload is not a JSON object'] };
  const unknown = Object.keys(value).filter((k) => !KNOWN_KEYS.has(k));
  if (unknown.length > 0) return { ok: false, errors: unknown.map((k) => `${k}: not a field of the notification schema`) };
  const decoded = decode(Notification, value);
  if (!decoded.ok) return { ok: false, errors: decoded.errors };
  if (decoded.value.domainName === '') return { ok: false, errors: ['domainName: expected a non-empty string, got ""'] };
  return { ok: true, notification: decoded.value };
}
