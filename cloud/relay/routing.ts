/**
 * Where a broker message goes. Plain values in, a plain route out: the relay only emits what this
 * returns, so the tenant rule lives in one place.
 */
import { parseNotification, type Notification } from '../../shared/notification.js';
import { buildingRoom, domainRoom, isValidBuildingId } from './rooms.js';
import type { ChannelLabel } from './metrics.js';

/** The broker names the relay listens on. Options, so tests and deployments can isolate them. */
export interface BrokerChannels {
  /** Channel of notifications. Default `notifications`. */
  notifications: string;
  /** Prefix of the per-building telemetry channels; the relay subscribes to `<prefix>*`. Default `telemetry:filtered:`. */
  telemetryPrefix: string;
}

export const DEFAULT_CHANNELS: BrokerChannels = { notifications: 'notifications', telemetryPrefix: 'telemetry:filtered:' };

/** The pattern subscription for telemetry, e.g. `telemetry:filtered:*` (glob characters in the prefix escaped). */
export function telemetryPattern(channels: BrokerChannels): string {
  return `${channels.telemetryPrefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
}

/**
 * The deepest a broker payload may nest, its outer object counting as one level. Readings and
 * notifications are flat objects (CONTRACTS.md), so this leaves ample room. A payload nested thousands of
 * levels deep still parses, since JSON.parse does not recurse, but Socket.IO's encoder walks it recursively
 * to look for binary: the emit would exhaust the stack after the message was parsed, and the message would
 * be lost without being counted as skipped.
 */
export const MAX_PAYLOAD_DEPTH = 32;

export type Route =
  | { kind: 'notification'; scope: 'domain'; room: string; payload: Notification }
  | { kind: 'notification'; scope: 'broadcast'; payload: Notification }
  | { kind: 'telemetry'; room: string; payload: Record<string, unknown> }
  | { kind: 'skip'; channel: ChannelLabel; reason: string }
  | { kind: 'foreign' };

/** The metric label of a broker channel, or undefined for a channel the relay does not serve. */
export function channelLabelOf(channel: string, channels: BrokerChannels): ChannelLabel | undefined {
  if (channel === channels.notifications) return 'notifications';
  if (channel.startsWith(channels.telemetryPrefix)) return 'telemetry';
  return undefined;
}

/**
 * Decides the audience of one broker message.
 * - notifications: must be a JSON object of the shared notification schema (unknown keys refused), then
 *   goes to `domain:{domainName}`, or to every socket when it has no domainName;
 * - telemetry: must be a JSON object, and goes to `building:{tail of the channel}` only.
 * Either is skipped when it nests deeper than {@link MAX_PAYLOAD_DEPTH} levels.
 *
 * @example
 * routeBrokerMessage('telemetry:filtered:b1', '{"type":"co2","value":600}', DEFAULT_CHANNELS);
 * // { kind: 'telemetry', room: 'building:b1', payload: { type: 'co2', value: 600 } }
 */
export function routeBrokerMessage(channel: string, payload: string, channels: BrokerChannels): Route {
  const label = channelLabelOf(channel, channels);
  if (label === 'notifications') {
    const json = parseShallowJson(payload);
    if (!json.ok) return { kind: 'skip', channel: label, reason: json.reason };
    // Checked here: parseNotification parses a string once more, so a payload that is a JSON string
    // holding a notification would be routed as one.
    if (!isJsonObject(json.value)) return { kind: 'skip', channel: label, reason: 'payload is not a JSON object' };
    const parsed = parseNotification(json.value);
    if (!parsed.ok) return { kind: 'skip', channel: label, reason: parsed.errors.slice(0, 3).join('; ') };
    const { domainName } = parsed.notification;
    return domainName === undefined
      ? { kind: 'notification', scope: 'broadcast', payload: parsed.notification }
      : { kind: 'notification', scope: 'domain', room: domainRoom(domainName), payload: parsed.notification };
  }
  if (label === 'telemetry') {
    const buildingId = channel.slice(channels.telemetryPrefix.length);
    if (!isValidBuildingId(buildingId)) return { kind: 'skip', channel: label, reason: 'channel does not end in a valid building id' };
    const json = parseShallowJson(payload);
    if (!json.ok) return { kind: 'skip', channel: label, reason: json.reason };
    if (!isJsonObject(json.value)) return { kind: 'skip', channel: label, reason: 'payload is not a JSON object' };
    return { kind: 'telemetry', room: buildingRoom(buildingId), payload: json.value };
  }
  return { kind: 'foreign' };
}

/** Whether a parsed JSON value is an object: not an array, a string or another scalar. */
function isJsonObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A payload parsed as JSON, or why it cannot be relayed. */
function parseShallowJson(payload: string): { ok: true; value: unknown } | { ok: false; reason: string } {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return { ok: false, reason: 'payload is not valid JSON' };
  }
  if (nestsDeeperThan(value, MAX_PAYLOAD_DEPTH)) return { ok: false, reason: `payload nests deeper than ${MAX_PAYLOAD_DEPTH} levels` };
  return { ok: true, value };
}

/**
 * Whether a parsed JSON value holds objects or arrays more than `max` levels deep, the value itself being
 * level one. Iterative, so a value of any depth is measured without recursion.
 */
function nestsDeeperThan(value: unknown, max: number): boolean {
  const pending: Array<{ node: unknown; depth: number }> = [{ node: value, depth: 1 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { node, depth } = next;
    if (node === null || typeof node !== 'object') continue;
    if (depth > max) return true;
    for (const child of Object.values(node)) {
      if (child !== null && typeof child === 'object') pending.push({ node: child, depth: depth + 1 });
    }
  }
  return false;
}
