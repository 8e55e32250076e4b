/**
 * The service's Prometheus series, on one registry per service instance.
 */
import { Counter, Gauge, Histogram, createRegistry, zeroLabels, type Registry } from '../../shared/prom.js';

export interface TelemetryMetrics {
  registry: Registry;
  batches: Counter<'outcome'>;
  readings: Counter;
  ingestSeconds: Histogram;
  alertsEnqueued: Counter;
  alertsRelayed: Counter;
  relayFailures: Counter;
  publishFailures: Counter;
  actions: Counter<'outcome'>;
  registrations: Counter<'outcome'>;
  retentionRuns: Counter<'outcome'>;
  partitionsDropped: Counter;
  outboxUnsent: Gauge;
}

/** outside_buildings: a per-gateway key sent readings for a building it may not write (403, nothing stored). */
export const BATCH_OUTCOMES = ['accepted', 'duplicate', 'invalid', 'too_large', 'bad_signature', 'outside_buildings', 'error'] as const;
export const ACTION_OUTCOMES = ['accepted', 'forbidden', 'not_found', 'invalid', 'device_rejected', 'device_unreachable', 'bad_endpoint', 'lookup_failed'] as const;

/** Creates the registry and every series, with labelled series at 0 from the start. */
export function createTelemetryMetrics(options: { defaults?: boolean } = {}): TelemetryMetrics {
  const registry = createRegistry('telemetry', options);
  const registers = [registry];
  const m: TelemetryMetrics = {
    registry,
    batches: new Counter({ name: 'telemetry_ingest_batches_total', help: 'Ingest batches by outcome', labelNames: ['outcome'], registers }),
    readings: new Counter({ name: 'telemetry_readings_stored_total', help: 'Readings accepted and stored', registers }),
    ingestSeconds: new Histogram({ name: 'telemetry_ingest_duration_seconds', help: 'Time to validate and store one batch', buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5], registers }),
    alertsEnqueued: new Counter({ name: 'telemetry_alerts_enqueued_total', help: 'Breaches written to the alert outbox', registers }),
    alertsRelayed: new Counter({ name: 'telemetry_alerts_relayed_total', help: 'Outbox alerts published to Kafka', registers }),
    relayFailures: new Counter({ name: 'telemetry_alert_relay_failures_total', help: 'Failed attempts to relay the outbox to Kafka', registers }),
    publishFailures: new Counter({ name: 'telemetry_publish_failures_total', help: 'Failed Redis publications of accepted readings', registers }),
    actions: new Counter({ name: 'telemetry_actions_total', help: 'Device actions by outcome', labelNames: ['outcome'], registers }),
    registrations: new Counter({ name: 'telemetry_registrations_total', help: 'Building registrations consumed, by outcome', labelNames: ['outcome'], registers }),
    retentionRuns: new Counter({ name: 'telemetry_retention_runs_total', help: 'Rollup and retention runs, by outcome', labelNames: ['outcome'], registers }),
    partitionsDropped: new Counter({ name: 'telemetry_partitions_dropped_total', help: 'Raw day partitions dropped after rollup', registers }),
    outboxUnsent: new Gauge({ name: 'telemetry_alert_outbox_unsent', help: 'Alerts waiting in the outbox', registers }),
  };
  zeroLabels(m.batches, 'outcome', BATCH_OUTCOMES);
  zeroLabels(m.actions, 'outcome', ACTION_OUTCOMES);
  zeroLabels(m.registrations, 'outcome', ['registered', 'malformed']);
  zeroLabels(m.retentionRuns, 'outcome', ['ok', 'failed']);
  return m;
}
