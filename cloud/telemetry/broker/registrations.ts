/**
 * The registration consumer: reads `building-registrations` (topic and group are options) from the
 * earliest offset of its group, and registers each building, its rooms and sensors, and its thresholds
 * for every room at once. A malformed message (not UTF-8, not JSON, or not a registration) is logged,
 * counted and skipped; a storage failure is retried by kafkajs. Kafka being unreachable at start, or
 * later, is retried every `retryMs`; a stop does not wait for a connect still being attempted.
 */
import { isUtf8 } from 'node:buffer';
import '../../../shared/kafkajs-idle-loop.js';
import type { Consumer, Kafka } from 'kafkajs';
import type { Logger } from 'pino';
import { describeError } from '../../../shared/errors.js';
import { settlesWithin } from '../../../shared/lifecycle.js';
import { parseRegistration } from '../domain/registration.js';
import type { TelemetryMetrics } from '../metrics.js';
import type { BuildingStore } from '../store/buildings.js';

export interface RegistrationConsumerOptions {
  kafka: Kafka;
  store: Pick<BuildingStore, 'applyRegistration'>;
  logger: Logger;
  metrics?: TelemetryMetrics;
  topic?: string;
  groupId?: string;
  retryMs?: number;
  /** The group session timeout (kafkajs default 30000 ms); a restarted member may wait this long to rejoin. */
  sessionTimeoutMs?: number;
  /** How long a stop waits for the consumer to disconnect. Default {@link DISCONNECT_WITHIN_MS}. */
  disconnectWithinMs?: number;
}

/** How long a stop waits for the consumer to disconnect: well inside the service's 5 s stop deadline. */
const DISCONNECT_WITHIN_MS = 1500;

export class RegistrationConsumer {
  private consumer: Consumer | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;

  constructor(private readonly options: RegistrationConsumerOptions) {}

  get topic(): string {
    return this.options.topic ?? 'building-registrations';
  }

  /** Starts consuming in the background; the service serves HTTP whether or not Kafka is up. */
  async start(): Promise<void> {
    this.stopped = false;
    void this.connect();
  }

  /**
   * Does not wait for a connect under way: while Kafka is unreachable kafkajs retries one for up to half
   * a minute, far past the few seconds a stop may take. That connect ends on its own, finds `stopped`,
   * and disconnects the consumer it made.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    const consumer = this.consumer;
    this.consumer = undefined;
    if (consumer === undefined) return;
    // kafkajs disconnects once the fetch in flight returns: within maxWaitTimeInMs from a broker that
    // answers, after its request timeout (30 s) from one gone silent. Offsets not committed are read
    // again at the next start (the apply is idempotent), so the stop waits a bounded time and the
    // disconnect goes on by itself.
    if (!(await settlesWithin(consumer.disconnect(), this.options.disconnectWithinMs ?? DISCONNECT_WITHIN_MS))) {
      this.options.logger.warn('the registration consumer did not disconnect in time; its uncommitted messages will be read again');
    }
  }

  /** Handles one message value; exported through the class for tests of the message path. */
  async handle(value: Buffer | null): Promise<'registered' | 'malformed'> {
    const { logger, metrics, store } = this.options;
    // Decoding would turn each invalid sequence into U+FFFD: `b` FF and `b` FE would both name building
    // "b\uFFFD", and two buildings would merge into one.
    if (value && !isUtf8(value)) {
      logger.warn({ topic: this.topic }, 'registration is not UTF-8; skipped');
      metrics?.registrations.inc({ outcome: 'malformed' });
      return 'malformed';
    }
    let input: unknown;
    try {
      input = JSON.parse(value?.toString('utf8') ?? '');
    } catch {
      logger.warn({ topic: this.topic }, 'registration is not JSON; skipped');
      metrics?.registrations.inc({ outcome: 'malformed' });
      return 'malformed';
    }
    const parsed = parseRegistration(input);
    if (!parsed.ok) {
      logger.warn({ topic: this.topic, problems: parsed.errors.slice(0, 20) }, 'registration is invalid; skipped');
      metrics?.registrations.inc({ outcome: 'malformed' });
      return 'malformed';
    }
    await store.applyRegistration(parsed.value);
    metrics?.registrations.inc({ outcome: 'registered' });
    logger.info({ buildingId: parsed.value.buildingId, rooms: parsed.value.rooms.length, sensors: parsed.value.sensors.length }, 'building registered');
    return 'registered';
  }

  private async connect(): Promise<void> {
    const { kafka, logger } = this.options;
    const consumer = kafka.consumer({
      groupId: this.options.groupId ?? 'telemetry-registrations',
      ...(this.options.sessionTimeoutMs !== undefined ? { sessionTimeout: this.options.sessionTimeoutMs, heartbeatInterval: Math.floor(this.options.sessionTimeoutMs / 3) } : {}),
      // kafkajs restarts a crashed consumer on its own; once we are stopping it must not (a crash during
      // disconnect would otherwise restart it behind our back and keep the process alive).
      retry: { retries: 5, initialRetryTime: 300, restartOnFailure: async () => !this.stopped },
      // A stop waits for the fetch in flight, which an idle broker holds this long (kafkajs: 5 s).
      maxWaitTimeInMs: 1000,
    });
    try {
      await consumer.connect();
      if (this.stopped) return await this.abandon(consumer);
      await consumer.subscribe({ topic: this.topic, fromBeginning: true });
      if (this.stopped) return await this.abandon(consumer);
      consumer.on(consumer.events.CRASH, (event) => {
        if (event.payload.restart || this.stopped) return;
        logger.warn({ error: describeError(event.payload.error) }, 'registration consumer crashed; reconnecting');
        void consumer.disconnect().catch(() => undefined);
        this.retryLater();
      });
      await consumer.run({ eachMessage: async ({ message }) => void (await this.handle(message.value)) });
      if (this.stopped) return await this.abandon(consumer);
      this.consumer = consumer;
    } catch (err) {
      await this.abandon(consumer);
      if (this.stopped) return;
      logger.warn({ error: describeError(err), retryMs: this.options.retryMs ?? 5000 }, 'registration consumer cannot reach Kafka; retrying');
      this.retryLater();
    }
  }

  /** Closes a consumer that will not be used: its connect failed, or the consumer was stopped meanwhile. */
  private async abandon(consumer: Consumer): Promise<void> {
    await consumer.disconnect().catch(() => undefined);
  }

  private retryLater(): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      void this.connect();
    }, this.options.retryMs ?? 5000);
  }
}
