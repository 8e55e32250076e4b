/**
 * The whole telemetry service (its composition of adapters, as main.ts builds it) on 127.0.0.1 port 0
 * against the stack's Redis and Kafka, for the tests of its Kafka paths (the registrations consumer, the
 * alert outbox relay): a pool the test owns, a fake directory, the shipped bindings, topics named by the
 * test. Stopped at teardown.
 */
import { Redis } from 'ioredis';
import '../../../../shared/kafkajs-idle-loop.js';
import { Kafka, logLevel } from 'kafkajs';
import type pg from 'pg';
import { createTelemetryMetrics, type TelemetryMetrics } from '../../../../cloud/telemetry/metrics.js';
import { TelemetryService, type TelemetryConfig } from '../../../../cloud/telemetry/service.js';
import { loadBindingCatalog } from '../../../../shared/devices/bindings.js';
import { createBuildingDirectory } from '../../../../shared/directory.js';
import { silentLogger } from '../../../../shared/logger.js';
import type { Teardown } from '../../../support/stack.js';
import { SHARED_SECRET, stackRedisUrl } from './harness.js';
import { stackBrokers, uniqueName } from './kafka.js';

export interface BrokeredServiceOptions {
  pool: pg.Pool;
  directoryUrl: string;
  alertsTopic: string;
  registrationsTopic: string;
  /** Default: a client of the stack's brokers named `telemetry-test`. */
  kafka?: Kafka;
  /** Settings over the defaults (fresh group, 6 s session, 250 ms broker retry). */
  config?: Partial<TelemetryConfig>;
}

/**
 * @example
 * const { service, metrics } = await startBrokeredService(t, { pool, directoryUrl: directory.url, alertsTopic, registrationsTopic });
 */
export async function startBrokeredService(t: Teardown, options: BrokeredServiceOptions): Promise<{ service: TelemetryService; metrics: TelemetryMetrics }> {
  const metrics = createTelemetryMetrics({ defaults: false });
  const service = new TelemetryService(
    {
      port: 0,
      host: '127.0.0.1',
      privacyFloor: 5,
      sharedKeys: [SHARED_SECRET],
      alertsTopic: options.alertsTopic,
      registrationsTopic: options.registrationsTopic,
      registrationsGroup: uniqueName('group'),
      registrationsSessionTimeoutMs: 6000,
      brokerRetryMs: 250,
      ...options.config,
    },
    {
      pool: options.pool,
      redis: new Redis(stackRedisUrl(), { maxRetriesPerRequest: 1 }),
      kafka: options.kafka ?? new Kafka({ clientId: 'telemetry-test', brokers: stackBrokers(), logLevel: logLevel.NOTHING }),
      directory: createBuildingDirectory({ baseUrl: options.directoryUrl, cacheTtlMs: 0 }),
      catalog: await loadBindingCatalog(),
      logger: silentLogger(),
      clock: Date.now,
      metrics,
    },
  );
  await service.start();
  t.teardown(() => service.stop());
  return { service, metrics };
}
