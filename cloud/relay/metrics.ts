/**
 * The relay's metrics, exactly as the seed's table names them. Every series exists at 0 from startup.
 */
import { Counter, Gauge, type Registry, zeroLabels } from '../../shared/prom.js';

/** The broker channels as metric labels. */
export const CHANNEL_LABELS = ['telemetry', 'notifications'] as const;
export type ChannelLabel = (typeof CHANNEL_LABELS)[number];

/** Why a notification went where it went. */
export const NOTIFICATION_SCOPES = ['domain', 'broadcast'] as const;
export type NotificationScope = (typeof NOTIFICATION_SCOPES)[number];

/** Why a subscribe_building call was refused; also the `reason` of the refused acknowledgement. */
export const SUBSCRIPTION_REJECTIONS = ['forbidden', 'lookup_failed'] as const;
export type SubscriptionRejection = (typeof SUBSCRIPTION_REJECTIONS)[number];

export interface RelayMetrics {
  connectedClients: Gauge<string>;
  telemetryRelayed: Counter<string>;
  notificationsRelayed: Counter<'scope'>;
  payloadBytes: Counter<'channel'>;
  messagesSkipped: Counter<'channel'>;
  connectionsRejected: Counter<string>;
  subscriptionsRejected: Counter<'reason'>;
  sessionsExpired: Counter<string>;
}

/**
 * Declares the relay's series on a registry (one registry per relay instance, so two relays in one
 * process never share counters).
 */
export function createRelayMetrics(registry: Registry): RelayMetrics {
  const registers = [registry];
  const metrics: RelayMetrics = {
    connectedClients: new Gauge({ name: 'socket_connected_clients', help: 'Browsers attached now', registers }),
    telemetryRelayed: new Counter({ name: 'telemetry_relayed_total', help: 'Telemetry messages relayed', registers }),
    notificationsRelayed: new Counter({
      name: 'notifications_relayed_total',
      help: 'Notifications relayed; scope is domain (tenant-scoped) or broadcast (system-wide)',
      labelNames: ['scope'],
      registers,
    }),
    payloadBytes: new Counter({
      name: 'relay_payload_bytes_total',
      help: 'Bytes of broker payload before fan-out; channel is telemetry or notifications',
      labelNames: ['channel'],
      registers,
    }),
    messagesSkipped: new Counter({
      name: 'relay_messages_skipped_total',
      help: 'Broker messages dropped because the payload was not valid JSON, nested too deep, or (for notifications) not the notification schema',
      labelNames: ['channel'],
      registers,
    }),
    connectionsRejected: new Counter({
      name: 'socket_connections_rejected_total',
      help: 'Handshakes refused for a missing or malformed claims header',
      registers,
    }),
    subscriptionsRejected: new Counter({
      name: 'socket_subscriptions_rejected_total',
      help: 'Refused subscribe_building calls; reason is forbidden or lookup_failed',
      labelNames: ['reason'],
      registers,
    }),
    sessionsExpired: new Counter({ name: 'socket_sessions_expired_total', help: 'Sockets dropped at the maximum lifetime', registers }),
  };
  metrics.connectedClients.set(0);
  metrics.telemetryRelayed.inc(0);
  metrics.connectionsRejected.inc(0);
  metrics.sessionsExpired.inc(0);
  zeroLabels(metrics.notificationsRelayed, 'scope', NOTIFICATION_SCOPES);
  zeroLabels(metrics.payloadBytes, 'channel', CHANNEL_LABELS);
  zeroLabels(metrics.messagesSkipped, 'channel', CHANNEL_LABELS);
  zeroLabels(metrics.subscriptionsRejected, 'reason', SUBSCRIPTION_REJECTIONS);
  return metrics;
}
