/**
 * The service's Prometheus metrics, created on one registry per service instance.
 */
import { Counter, Gauge, createRegistry, zeroLabels, type Registry } from '../../shared/prom.js';

/** How a consumed alert record was settled (CONTRACTS.md). */
export const ALERT_OUTCOMES = ['delivered', 'suppressed', 'unroutable', 'unsupported_metric', 'malformed'] as const;
export type AlertOutcome = (typeof ALERT_OUTCOMES)[number];

/**
 * Why a push attempt failed and the subscription was kept. `forbidden_destination`: the endpoint's host
 * is or resolves to a private address, or it is `http:` while WEB_PUSH_ALLOW_HTTP is off, and nothing
 * was sent.
 */
export const PUSH_FAILURES = ['not_configured', 'rejected', 'unreachable', 'timeout', 'forbidden_destination'] as const;
export type PushFailure = (typeof PUSH_FAILURES)[number];

export interface NotificationMetrics {
  registry: Registry;
  alertsConsumed: Counter<'outcome'>;
  inAppPublished: Counter<'kind'>;
  pushSent: Counter<string>;
  pushFailed: Counter<'reason'>;
  pushRemoved: Counter<string>;
  directoryFailures: Counter<'code'>;
  consumerLag: Gauge<'topic' | 'partition'>;
  consumerLagTotal: Gauge<'topic'>;
}

/**
 * Creates the metrics on a fresh registry labelled `service=notification`.
 *
 * @example
 * const metrics = createMetrics();
 * metrics.alertsConsumed.inc({ outcome: 'delivered' });
 */
export function createMetrics(options: { defaults?: boolean } = {}): NotificationMetrics {
  const registry = createRegistry('notification', options);
  const registers = [registry];
  const metrics: NotificationMetrics = {
    registry,
    alertsConsumed: new Counter({
      name: 'notification_alerts_consumed_total',
      help: 'Alert records consumed from Kafka, by how they were settled',
      labelNames: ['outcome'],
      registers,
    }),
    inAppPublished: new Counter({
      name: 'notification_inapp_published_total',
      help: 'In-app notifications published on the notifications channel',
      labelNames: ['kind'],
      registers,
    }),
    pushSent: new Counter({ name: 'notification_push_sent_total', help: 'Web Push messages accepted by a push service', registers }),
    pushFailed: new Counter({
      name: 'notification_push_failed_total',
      help: 'Web Push attempts that failed; the subscription was kept',
      labelNames: ['reason'],
      registers,
    }),
    pushRemoved: new Counter({
      name: 'notification_push_removed_total',
      help: 'Device subscriptions deleted because the push service answered 404 or 410',
      registers,
    }),
    directoryFailures: new Counter({
      name: 'notification_directory_failures_total',
      help: 'Failed building directory lookups, by failure code',
      labelNames: ['code'],
      registers,
    }),
    consumerLag: new Gauge({
      name: 'notification_kafka_consumer_lag',
      help: 'Records of the alerts topic not yet committed by the consumer group, per partition',
      labelNames: ['topic', 'partition'],
      registers,
    }),
    consumerLagTotal: new Gauge({
      name: 'notification_kafka_consumer_lag_total',
      help: 'Records of the alerts topic not yet committed by the consumer group, all partitions',
      labelNames: ['topic'],
      registers,
    }),
  };
  zeroLabels(metrics.alertsConsumed, 'outcome', ALERT_OUTCOMES);
  zeroLabels(metrics.inAppPublished, 'kind', ['alert', 'manual']);
  zeroLabels(metrics.pushFailed, 'reason', PUSH_FAILURES);
  zeroLabels(metrics.directoryFailures, 'code', ['timeout', 'unreachable', 'bad_status', 'bad_body']);
  return metrics;
}
