/**
 * The telemetry service's lifecycle: start() migrates (and warns about ingest keys that may write any
 * building), serves HTTP (with the device commands' own dispatcher), and starts the alert relay, the
 * registration consumer and the retention job; stop() undoes all of it and closes the connections.
 */
import http from 'node:http';
import '../../shared/kafkajs-idle-loop.js';
import type { Kafka } from 'kafkajs';
import type { Redis } from 'ioredis';
import type { Pool } from 'pg';
import type { Logger } from 'pino';
import type { Agent } from 'undici';
import { createDeviceAdapter } from '../../shared/devices/adapter.js';
import type { BindingCatalog } from '../../shared/devices/bindings.js';
import { createDeviceDispatcher } from '../../shared/devices/dispatcher.js';
import type { BuildingDirectory } from '../../shared/directory.js';
import { closeServer, listen, type Lifecycle } from '../../shared/lifecycle.js';
import type { Resolver } from '../../shared/lookup.js';
import type { Clock } from '../../shared/ttl-cache.js';
import { createApp } from './app.js';
import { AlertRelay } from './broker/alert-relay.js';
import { kafkaAlertSink } from './broker/kafka-alerts.js';
import { DEFAULT_CHANNELS, createRedisPublisher, type ChannelNames } from './broker/redis-publisher.js';
import { RegistrationConsumer } from './broker/registrations.js';
import { createIngestService, type IngestService } from './ingest.js';
import { createTelemetryMetrics, type TelemetryMetrics } from './metrics.js';
import { RetentionJob } from './retention.js';
import { createSigningKeys } from './signing-keys.js';
import { PgBuildingStore } from './store/buildings.js';
import { PgIngestKeyStore } from './store/ingest-keys.js';
import { migrate } from './store/migrate.js';
import { PgOutboxStore } from './store/outbox.js';
import { PgReadingsStore } from './store/readings.js';
import { PgRetentionStore } from './store/retention.js';
import { PgThresholdStore } from './store/thresholds.js';

export interface TelemetryConfig {
  port: number;
  host?: string;
  privacyFloor: number;
  /** INGEST_SIGNING_SECRET as a ring, current first. */
  sharedKeys: readonly string[];
  channels?: ChannelNames;
  alertsTopic?: string;
  registrationsTopic?: string;
  registrationsGroup?: string;
  /** Session timeout of the registration consumer's group membership. Default 30000 ms. */
  registrationsSessionTimeoutMs?: number;
  /** Kafka reconnect period (relay and consumer). Default 5000 ms. */
  brokerRetryMs?: number;
  relayIdleMs?: number;
  retentionIntervalMs?: number;
  deviceTimeoutMs?: number;
}

/** Clients created by the composition root; the service closes them on stop. */
export interface TelemetryClients {
  pool: Pool;
  redis: Redis;
  kafka: Kafka;
  directory: BuildingDirectory;
  catalog: BindingCatalog;
  logger: Logger;
  clock: Clock;
  metrics?: TelemetryMetrics;
  /** How device hosts are resolved for /executeAction. Default dns.lookup (so /etc/hosts applies). */
  deviceResolver?: Resolver;
}

export class TelemetryService implements Lifecycle {
  private server: http.Server | undefined;
  private parts: Array<{ stop(): Promise<void> }> = [];
  /** The start is migrating: its client is checked out until the migration ends (see stop). */
  private migrating = false;
  private ingest: IngestService | undefined;
  /** The device commands' own connections, whose host lookups are bounded (`shared/devices/dispatcher.ts`). */
  private deviceDispatcher: Agent | undefined;
  /** The bound HTTP port, once started. */
  port = 0;

  constructor(
    private readonly config: TelemetryConfig,
    private readonly clients: TelemetryClients,
  ) {}

  async start(): Promise<void> {
    const { pool, redis, kafka, directory, catalog, logger, clock } = this.clients;
    const { config } = this;
    const metrics = this.clients.metrics ?? createTelemetryMetrics();
    this.migrating = true;
    try {
      await migrate(pool);
    } finally {
      this.migrating = false;
    }
    const ingestKeys = new PgIngestKeyStore(pool);
    const unbound = await ingestKeys.unboundKeyIds();
    if (unbound.length > 0) {
      logger.warn(
        { keyIds: unbound },
        'ingest keys made before keys named buildings may write any building; confine each with keys-cli.ts bind <keyId> --building <id>',
      );
    }

    const readings = new PgReadingsStore(pool);
    const buildings = new PgBuildingStore(pool);
    const relay = new AlertRelay({
      outbox: new PgOutboxStore(pool),
      sink: kafkaAlertSink(kafka, config.alertsTopic),
      logger,
      metrics,
      ...(config.brokerRetryMs !== undefined ? { retryMs: config.brokerRetryMs } : {}),
      ...(config.relayIdleMs !== undefined ? { idleMs: config.relayIdleMs } : {}),
    });
    const consumer = new RegistrationConsumer({
      kafka,
      store: buildings,
      logger,
      metrics,
      ...(config.registrationsTopic !== undefined ? { topic: config.registrationsTopic } : {}),
      ...(config.registrationsGroup !== undefined ? { groupId: config.registrationsGroup } : {}),
      ...(config.registrationsSessionTimeoutMs !== undefined ? { sessionTimeoutMs: config.registrationsSessionTimeoutMs } : {}),
      ...(config.brokerRetryMs !== undefined ? { retryMs: config.brokerRetryMs } : {}),
    });
    const retention = new RetentionJob({
      store: new PgRetentionStore(pool),
      onDropped: (name) => readings.forgetPartition(name),
      clock,
      privacyFloor: config.privacyFloor,
      logger,
      metrics,
      ...(config.retentionIntervalMs !== undefined ? { intervalMs: config.retentionIntervalMs } : {}),
    });
    this.ingest = createIngestService({
      store: readings,
      publisher: createRedisPublisher(redis, config.channels ?? DEFAULT_CHANNELS),
      onAlerts: () => relay.nudge(),
      metrics,
      logger,
      clock,
    });
    // Device commands get their own dispatcher: on the global one, a device name whose DNS never
    // answers would take libuv's lookup threads from PostgreSQL, Redis, Kafka and the directory.
    this.deviceDispatcher = createDeviceDispatcher({
      ...(config.deviceTimeoutMs !== undefined ? { timeoutMs: config.deviceTimeoutMs } : {}),
      ...(this.clients.deviceResolver ? { resolve: this.clients.deviceResolver } : {}),
    });
    const app = createApp({
      ingest: this.ingest,
      // The key cache measures its 30 s on its own monotonic clock: the service's is the wall clock.
      keys: createSigningKeys({ shared: config.sharedKeys, store: ingestKeys }),
      thresholds: new PgThresholdStore(pool),
      buildings,
      directory,
      devices: createDeviceAdapter({
        catalog,
        sensors: buildings,
        dispatcher: this.deviceDispatcher,
        ...(config.deviceTimeoutMs !== undefined ? { timeoutMs: config.deviceTimeoutMs } : {}),
      }),
      catalog,
      metrics,
      logger,
    });
    this.server = http.createServer(app);
    this.port = await listen(this.server, config.port, config.host);
    await relay.start();
    await consumer.start();
    await retention.start();
    this.parts = [retention, consumer, relay];
    logger.info({ port: this.port }, 'telemetry listening');
  }

  /**
   * The batches still being stored and their publications go first, and Redis with them: they wait on
   * nothing of Kafka's, so an outage cannot cost them the stop's deadline, and a Redis that stopped
   * answering holds them at most its client's command timeout (PUBLISHING_REDIS_OPTIONS, 2 s), QUIT
   * included. The parts follow (they do not wait for a Kafka connection still being attempted), then
   * the pool, which they all use.
   */
  async stop(): Promise<void> {
    if (this.server) await closeServer(this.server);
    // Once the server is closed, a device command still running (its caller cut off) is aborted, not waited for.
    await this.deviceDispatcher?.destroy().catch(() => undefined);
    this.deviceDispatcher = undefined;
    await this.ingest?.drain();
    await this.clients.redis.quit().catch(() => this.clients.redis.disconnect());
    for (const part of this.parts) await part.stop();
    this.parts = [];
    // A migration still running (waiting for another replica's, or long) holds its client until it ends,
    // and pool.end() waits for every client: the stop ran out its deadline and exited 1. The process ends
    // after the stop, and with it the connection, so PostgreSQL rolls the migration back.
    const ending = this.clients.pool.end();
    if (this.migrating) ending.catch(() => undefined);
    else await ending;
  }
}
