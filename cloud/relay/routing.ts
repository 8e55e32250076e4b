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
 * - notifications: must parse as the shared notification schema (unknown keys refused), then goes to
 *   `domain:{domainName}`, or to every socket when it has no domainName;
 * - telemetry: must be a JSON object, and goes to `building:{tail of the channel}` only.
 *
 * @example
 * routeBrokerMessage('telemetry:filtered:b1', '{"type":"co2","value":600}', DEFAULT_CHANNELS);
 * // { kind: 'telemetry', room: 'building:b1', payload: { type: 'co2', value: 600 } }
 */
export function routeBrokerMessage(channel: string, payload: string, channels: BrokerChannels): Route {
  const label = channelLabelOf(channel, channels);
  if (label === 'notifications') {
    const parsed = parseNotification(payload);
    if (!parsed.ok) return { kind: 'skip', channel: label, reason: parsed.errors.slice(0, 3).join('; ') };
    const { domainName } = parsed.notification;
    return domainName === undefined
      ? { kind: 'notification', scope: 'broadcast', payload: parsed.notification }
      : { kind: 'notification', scope: 'domain', room: domainRoom(domainName), payload: parsed.notification };
  }
  if (label === 'telemetry') {
    const buildingId = channel.slice(channels.telemetryPrefix.length);
    if (!isValidBuildingId(buildingId)) return { kind: 'skip', channel: label, reason: 'channel does not end in a valid building id' };
    let value: unknown;
    try {
      value = JSON.parse(payload);
    } catch {
      return { kind: 'skip', channel: label, reason: 'payload is not valid JSON' };
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      return { kind: 'skip', channel: label, reason: 'payload is not a JSON object' };
    }
    return { kind: 'telemetry', room: buildingRoom(buildingId), payload: value as Record<string, unknown> };
  }
  return { kind: 'foreign' };
}
