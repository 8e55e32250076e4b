/**
 * The Kafka adapter: a consumer-group member on the alerts topic, and the consumer-lag gauge.
 *
 * Records are read from the earliest offset, several partitions at once, and settled a slice of a
 * batch at a time. An offset is resolved only after its record and every record before it in the
 * partition are settled, and only resolved offsets are committed. When Kafka is unreachable the consumer is
 * retried every 5 seconds, at boot and after a crash. Batches compressed with gzip, Snappy, LZ4 or ZSTD
 * are read (shared/kafka-codecs.ts), whoever compressed them: another producer, or the broker for a
 * topic whose `compression.type` asks it.
 */
import '../../shared/kafkajs-idle-loop.js';
// Batches compressed with Snappy, LZ4 or ZSTD would otherwise crash the consumer on every fetch.
import '../../shared/kafka-codecs.js';
import { Kafka, logLevel, type Admin, type Consumer, type EachBatchPayload, type LogEntry } from 'kafkajs';
import type { Logger } from 'pino';
import { describeError } from '../../shared/errors.js';
import { settlesWithin } from '../../shared/lifecycle.js';
import type { NotificationMetrics } from './metrics.js';
import type { AlertRecord, RecordSource, Settlement } from './breach.js';

export const ALERTS_TOPIC = 'alerts';
export const ALERTS_GROUP = 'alerts';

export interface AlertConsumerOptions {
  brokers: string[];
  /** Default `alerts`. */
  topic?: string;
  /** Default `alerts`. */
  groupId?: string;
  clientId?: string;
  /** Partitions handled at once. Default 4. */
  partitionsConsumedConcurrently?: number;
  /** Records settled together: a batch is cut into slices of this size. Default 5000. */
  sliceSize?: number;
  /** Delay before a new attempt when Kafka is unreachable or the consumer crashed. Default 5000 ms. */
  reconnectMs?: number;
  /** How often the lag gauge is refreshed. Default 15000 ms; 0 refreshes only on demand. */
  lagIntervalMs?: number;
  /** Told of every offset commit, once Kafka accepted it (progress observers, the benchmark). */
  onCommit?: (partitions: ReadonlyArray<{ partition: number; offset: string }>) => void;
  /** Settles records in order; says how many leading records are settled. */
  settle: (records: AlertRecord[], source: RecordSource) => Promise<Pick<Settlement, 'settled' | 'error'>>;
  metrics: NotificationMetrics;
  logger: Logger;
}

/** Routes kafkajs's own log lines to pino, at warn and above. */
function kafkaLogCreator(logger: Logger) {
  return () =>
    ({ namespace, level, log }: LogEntry) => {
      const { message, timestamp: _timestamp, logger: _name, stack: _stack, ...extra } = log as unknown as Record<string, unknown>;
      const fields = { namespace, ...Object.fromEntries(Object.entries(extra).filter(([, v]) => typeof v !== 'object' || v === null)) };
      if (level === logLevel.ERROR) logger.error(fields, String(message));
      else if (level === logLevel.WARN) logger.warn(fields, String(message));
      else logger.debug(fields, String(message));
    };
}

export class KafkaAlertConsumer {
  readonly topic: string;
  readonly groupId: string;
  private readonly kafka: Kafka;
  private consumer: Consumer | undefined;
  private admin: Admin | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private lagTimer: NodeJS.Timeout | undefined;
  private stopped = true;
  /**
   * Set by the first `stop()` and never cleared: a start that comes after it (a service whose start
   * went on after its stop began) does nothing, rather than join the group while the process exits.
   */
  private stopCalled = false;
  private attempt: Promise<void> | undefined;
  /**
   * The consumer of the attempt in progress while it connects and subscribes, the part a stop cuts
   * short. Once it asked to join, only its own stop makes it leave the group: see {@link joinGroup}.
   */
  private connecting: Consumer | undefined;
  /** The stop under way, kept so that {@link closed} can wait for it past the time `stop` gave it. */
  private closing: Promise<void> | undefined;

  constructor(private readonly options: AlertConsumerOptions) {
    this.topic = options.topic ?? ALERTS_TOPIC;
    this.groupId = options.groupId ?? ALERTS_GROUP;
    this.kafka = new Kafka({
      clientId: options.clientId ?? 'notification-service',
      brokers: options.brokers,
      logLevel: logLevel.WARN,
      logCreator: kafkaLogCreator(options.logger.child({ component: 'kafka' })),
      // A few quick retries for transient errors; an unreachable cluster is then retried every reconnectMs.
      retry: { retries: 3, initialRetryTime: 300, maxRetryTime: 5000 },
    });
  }

  /**
   * Joins the group and starts consuming. Resolves once joined, or once the first attempt failed (a
   * new attempt is then scheduled every `reconnectMs`), so the HTTP surface starts either way. Does
   * nothing once `stop()` has been called: a stopped consumer is not started again.
   */
  async start(): Promise<void> {
    if (this.stopCalled) return;
    this.stopped = false;
    await this.connect();
    if (this.stopped) return;
    const interval = this.options.lagIntervalMs ?? 15_000;
    if (interval > 0) {
      this.lagTimer = setInterval(() => void this.refreshLag().catch(() => undefined), interval);
      this.lagTimer.unref();
    }
  }

  /** True while a consumer is joined and running. */
  get running(): boolean {
    return this.consumer !== undefined;
  }

  private connect(): Promise<void> {
    this.attempt = this.runConsumer();
    return this.attempt;
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.reconnectTimer) return;
    const delay = this.options.reconnectMs ?? 5000;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      void this.connect();
    }, delay);
  }

  private async runConsumer(): Promise<void> {
    const { logger } = this.options;
    const consumer = this.kafka.consumer({
      groupId: this.groupId,
      // An idle fetch waits at most this long, and a stop waits for the fetch in flight: keep SIGTERM quick.
      maxWaitTimeInMs: 1000,
      // kafkajs never restarts a crashed consumer on its own backoff (0.3 s to a few seconds): every
      // crash goes to the handler below, which reconnects every reconnectMs (5 s), as the seed fixes it.
      retry: { retries: 5, restartOnFailure: async () => false },
    });
    let crashed = false;
    consumer.on(consumer.events.CRASH, (event) => {
      if (event.payload.restart) return;
      crashed = true;
      logger.error({ error: event.payload.error.name, topic: this.topic }, 'alert consumer crashed; reconnecting');
      if (this.consumer === consumer) this.consumer = undefined;
      void consumer.disconnect().catch(() => undefined);
      this.scheduleReconnect();
    });
    const { onCommit } = this.options;
    if (onCommit) {
      consumer.on(consumer.events.COMMIT_OFFSETS, (event) => {
        // kafkajs names the partitions of a commit by string keys at run time, whatever its types say.
        for (const committed of event.payload.topics) {
          if (committed.topic === this.topic) onCommit(committed.partitions.map(({ partition, offset }) => ({ partition: Number(partition), offset })));
        }
      });
    }
    this.connecting = consumer;
    try {
      await consumer.connect();
      await consumer.subscribe({ topic: this.topic, fromBeginning: true });
      if (this.connecting === consumer) this.connecting = undefined;
      if (this.stopped) {
        await consumer.disconnect();
        return;
      }
      await this.joinGroup(consumer);
      // A join that failed resolves `run` all the same, after the crash handler above disconnected the
      // consumer and scheduled the next attempt: that consumer is not running.
      if (crashed) return;
      if (this.stopped) {
        // Joined while stopping: its own stop settles what it already reads, commits and leaves the group.
        await consumer.disconnect();
        return;
      }
      this.consumer = consumer;
      logger.info({ topic: this.topic, groupId: this.groupId }, 'alert consumer running');
    } catch (err) {
      logger.error({ error: describeError(err), topic: this.topic }, `alert consumer could not start; retrying in ${this.options.reconnectMs ?? 5000} ms`);
      await consumer.disconnect().catch(() => undefined);
      this.scheduleReconnect();
    } finally {
      if (this.connecting === consumer) this.connecting = undefined;
    }
  }

  /**
   * Joins the group and starts consuming; resolves once joined, or once the join failed (a crash).
   *
   * Not to be cut short by a disconnect: kafkajs counts a consumer as running only once it joined, so
   * its disconnect during a JoinGroup (held by a rebalance, 3 s by default for an empty group) stops
   * nothing. The JoinGroup is still answered and the member never leaves the group: its SyncGroup and
   * fetches reconnect by themselves and it settles records with no one left to stop it, or it crashes
   * on the closed connection, and its partitions wait for its session to time out.
   */
  private joinGroup(consumer: Consumer): Promise<void> {
    return consumer.run({
      partitionsConsumedConcurrently: this.options.partitionsConsumedConcurrently ?? 4,
      eachBatchAutoResolve: false,
      autoCommit: true,
      eachBatch: (payload) => this.eachBatch(payload),
    });
  }

  private async eachBatch({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const { topic, partition, messages } = batch;
    const slice = this.options.sliceSize ?? 5000;
    // A slice may wait on lookups and pushes; keep the group membership alive meanwhile (kafkajs sends
    // a heartbeat only when its interval has passed).
    const beat = setInterval(() => void heartbeat().catch(() => undefined), 1000);
    try {
      for (let start = 0; start < messages.length; start += slice) {
        if (!isRunning() || isStale()) return;
        const part = messages.slice(start, start + slice);
        const { settled, error } = await this.options.settle(part, { topic, partition });
        const last = part[settled - 1];
        // Only settled records are resolved, and kafkajs commits only resolved offsets.
        if (last) resolveOffset(last.offset);
        if (settled < part.length) {
          if (error !== undefined) throw error;
          return;
        }
      }
    } finally {
      clearInterval(beat);
    }
  }

  /**
   * Sets the lag gauge: per partition, the high watermark minus the group's committed offset (the
   * earliest offset when nothing is committed yet, since the group starts from the beginning).
   */
  async refreshLag(): Promise<number> {
    this.admin ??= this.kafka.admin();
    await this.admin.connect();
    const [ends, committed] = await Promise.all([
      this.admin.fetchTopicOffsets(this.topic),
      this.admin.fetchOffsets({ groupId: this.groupId, topics: [this.topic] }),
    ]);
    const committedByPartition = new Map<number, bigint>();
    for (const p of committed.find((c) => c.topic === this.topic)?.partitions ?? []) committedByPartition.set(p.partition, BigInt(p.offset));
    let total = 0;
    for (const end of ends) {
      const high = BigInt(end.high);
      const low = BigInt(end.low);
      const done = committedByPartition.get(end.partition) ?? -1n;
      const from = done >= 0n ? done : low;
      const lag = Number(high > from ? high - from : 0n);
      total += lag;
      this.options.metrics.consumerLag.set({ topic: this.topic, partition: String(end.partition) }, lag);
    }
    this.options.metrics.consumerLagTotal.set({ topic: this.topic }, total);
    return total;
  }

  /**
   * Stops consuming. A running consumer finishes the slice it is settling and commits what is settled
   * before it leaves the group. An attempt still connecting or subscribing is cut short: a broker that
   * does not answer would hold it for retries of its request timeout. An attempt already joining is
   * waited for, and then stopped the same way as a running consumer, so that it leaves the group (see
   * {@link joinGroup}). Waits at most `timeoutMs`; past it the consumer is left to close on its own,
   * and records it settled but did not commit are read again by the group, as duplicates, unless
   * {@link closed} waits for it longer. True when everything closed in time.
   */
  async stop(timeoutMs = Number.POSITIVE_INFINITY): Promise<boolean> {
    this.stopCalled = true;
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    if (this.lagTimer) clearInterval(this.lagTimer);
    this.lagTimer = undefined;
    this.closing = (async () => {
      await this.connecting?.disconnect().catch(() => undefined);
      // An attempt that joins disconnects its consumer itself once joined.
      await this.attempt?.catch(() => undefined);
      const consumer = this.consumer;
      this.consumer = undefined;
      await consumer?.disconnect().catch(() => undefined);
      await this.admin?.disconnect().catch(() => undefined);
      this.admin = undefined;
    })();
    return settlesWithin(this.closing, timeoutMs);
  }

  /**
   * Waits at most `timeoutMs` more for the stop under way to finish: the slice being settled, its
   * commit and the leave. True when it finished (or no stop was asked for).
   */
  closed(timeoutMs: number): Promise<boolean> {
    return settlesWithin(this.closing ?? Promise.resolve(), timeoutMs);
  }
}
