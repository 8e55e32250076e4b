/**
 * The relay loop: drains the alert outbox to Kafka. Ingest only writes the outbox and nudges the loop,
 * so it never waits on Kafka. While Kafka is unreachable the loop retries every `retryMs` and the
 * alerts wait in PostgreSQL; none is lost, and each is marked sent only once Kafka acknowledged it.
 * While the relay runs, a slow acknowledgement is waited for: kafkajs's own request timeout decides
 * when a send has failed. Once a stop has begun, a send is given up on after `SEND_AFTER_STOP_WITHIN_MS`,
 * so a Kafka that stops answering holds neither the outbox rows nor a stop for longer than that.
 */
import type { Logger } from 'pino';
import type { SafeMessageError } from '../../../shared/describe-error.js';
import { describeError } from '../../../shared/errors.js';
import { settlesWithin } from '../../../shared/lifecycle.js';
import type { TelemetryMetrics } from '../metrics.js';
import type { OutboxMessage, OutboxStore } from '../store/outbox.js';
import type { AlertSink } from './kafka-alerts.js';

/**
 * How long a send still unanswered is waited for once a stop has begun. The send runs inside the
 * PostgreSQL transaction that holds its rows, and a Kafka that stops answering without closing the
 * connection (a partition, a blackholing balancer) keeps kafkajs waiting its request timeout (30 s) on
 * each retry: unbounded, that wait held the rows and every stop past the service's stop deadline. A
 * send given up on rolls the rows back to unsent; if it lands anyway, the next pass sends them again, a
 * duplicate that consumers drop by alertId (at-least-once, seed 002).
 *
 * Only a stop is bounded this tightly. Capping every send at 2 s gave up on a Kafka that was slow but
 * working (a lagging in-sync follower, a loaded cluster, a new producer fetching metadata): the send
 * landed after the rows had rolled back, and the next pass sent the same batch again, slow again, so the
 * outbox never got past its first batch and the topic got that batch every few seconds.
 */
const SEND_AFTER_STOP_WITHIN_MS = 2000;

/**
 * How long a send may go unanswered while the relay runs (the default of `sendWithinMs`). kafkajs ends
 * a send to a silent broker itself, after its request timeout (30 s) on each of the producer's three
 * attempts; this only ends one that kafkajs would never settle, so that the relay cannot wedge holding
 * its rows. Such a send is given up on like one cut short by a stop, and its producer replaced.
 */
const SEND_WITHIN_MS = 120_000;

/**
 * How long a disconnect from Kafka is waited for. kafkajs's waits for every request still unanswered,
 * which after a send given up on is the silent broker's request timeout; the producer left behind closes
 * on its own once kafkajs gives up on it.
 */
const DISCONNECT_WITHIN_MS = 500;

export interface AlertRelayOptions {
  outbox: OutboxStore;
  sink: AlertSink;
  logger: Logger;
  metrics?: TelemetryMetrics;
  /** Poll period when idle (alerts written by other replicas are picked up this often). Default 1000 ms. */
  idleMs?: number;
  /** Wait after a failure before trying again (the seed's broker reconnect: 5 s). */
  retryMs?: number;
  batchSize?: number;
  /**
   * How long a send may go unanswered while the relay runs before it is given up on. Default 120 s:
   * longer than kafkajs takes to fail a send to a silent broker with its default request timeout.
   */
  sendWithinMs?: number;
}

/** A send to Kafka that got no answer in time; its alerts stay unsent. */
export class AlertSendTimedOut extends Error implements SafeMessageError {
  readonly messageIsSafe = true;
  constructor(ms: number, afterStop: boolean) {
    super(`no acknowledgement from Kafka within ${ms} ms${afterStop ? ' of the stop' : ''}`);
    this.name = 'AlertSendTimedOut';
  }
}

export class AlertRelay {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  /** Aborted by stop(): a send under way has `SEND_AFTER_STOP_WITHIN_MS` left from then on. */
  private stopping: AbortController | undefined;
  private connected = false;
  /** The sink is connecting: the tick under way is not waited for by stop(). */
  private connecting = false;
  private healthy = true;
  private wakeAgain = false;

  constructor(private readonly options: AlertRelayOptions) {}

  async start(): Promise<void> {
    this.stopped = false;
    this.stopping = new AbortController();
    this.schedule(0);
  }

  /** New alerts are in the outbox: relay them now rather than at the next poll (unless backing off). */
  nudge(): void {
    if (this.stopped || !this.healthy) return;
    if (this.running) this.wakeAgain = true;
    else this.schedule(0);
  }

  /**
   * Waits for a pass that is relaying (it holds a PostgreSQL transaction), at most
   * `SEND_AFTER_STOP_WITHIN_MS` for its send and `DISCONNECT_WITHIN_MS` for the disconnect after a send
   * given up on, but not for one still connecting to Kafka: while Kafka is unreachable kafkajs retries a
   * connect for longer than a stop may take. That pass ends on its own and closes what it connected
   * (connectSink).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping?.abort();
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.connecting) await this.running;
    if (this.connected) {
      this.connected = false;
      await this.disconnectSink();
    }
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.tick().finally(() => {
        this.running = undefined;
      });
    }, ms);
  }

  private async tick(): Promise<void> {
    const { outbox, logger, metrics } = this.options;
    const batchSize = this.options.batchSize ?? 500;
    let delay = this.options.idleMs ?? 1000;
    let kafkaFailed = false;
    try {
      if (!this.connected) {
        kafkaFailed = true;
        if (!(await this.connectSink())) return;
        kafkaFailed = false;
        if (!this.healthy) logger.info('alert relay reconnected to Kafka');
      }
      for (;;) {
        const sent = await outbox.relay(batchSize, async (messages) => {
          try {
            await this.sendInTime(messages);
          } catch (err) {
            kafkaFailed = true;
            throw err;
          }
        });
        metrics?.alertsRelayed.inc(sent);
        if (sent < batchSize || this.stopped) break;
      }
      this.healthy = true;
      // Best effort, as below: a count that fails after a pass that relayed is no relay failure.
      if (metrics) await outbox.unsent().then((n) => metrics.outboxUnsent.set(n), () => undefined);
    } catch (err) {
      this.healthy = false;
      delay = this.options.retryMs ?? 5000;
      metrics?.relayFailures.inc();
      logger.warn({ error: describeError(err), kafka: kafkaFailed, retryMs: delay }, 'alert relay failed; alerts stay in the outbox');
      if (kafkaFailed && this.connected) {
        this.connected = false;
        await this.disconnectSink();
      }
      // An outage is when the backlog matters most: the gauge must follow it, not keep the last
      // count a successful pass saw (PostgreSQL may be the part that is down, so best effort).
      if (metrics) await outbox.unsent().then((n) => metrics.outboxUnsent.set(n), () => undefined);
    }
    if (this.stopped) return;
    const again = this.wakeAgain && this.healthy;
    this.wakeAgain = false;
    this.schedule(again ? 0 : delay);
  }

  /**
   * Sends, waiting for Kafka's acknowledgement however slow it is while the relay runs (kafkajs's request
   * timeout fails a send to a broker that does not answer). Throws AlertSendTimedOut once
   * `SEND_AFTER_STOP_WITHIN_MS` have passed since a stop began, or `sendWithinMs` since the send began,
   * without an answer.
   */
  private async sendInTime(messages: OutboxMessage[]): Promise<void> {
    const send = this.options.sink.send(messages);
    const late = await this.unansweredAfter(send, this.stopping?.signal);
    if (late) throw new AlertSendTimedOut(late.ms, late.afterStop);
    await send;
  }

  /**
   * Waits for `send` to settle; undefined when it did, or else the wait that ran out first: `sendWithinMs`
   * from now, or `SEND_AFTER_STOP_WITHIN_MS` from when `stop` is aborted.
   */
  private unansweredAfter(send: Promise<void>, stop: AbortSignal | undefined): Promise<{ ms: number; afterStop: boolean } | undefined> {
    const runningMs = this.options.sendWithinMs ?? SEND_WITHIN_MS;
    return new Promise((resolve) => {
      const timers: NodeJS.Timeout[] = [];
      const expireAfter = (ms: number, afterStop: boolean) => timers.push(setTimeout(() => settle({ ms, afterStop }), ms));
      const onStop = () => expireAfter(SEND_AFTER_STOP_WITHIN_MS, true);
      const settle = (late: { ms: number; afterStop: boolean } | undefined) => {
        for (const timer of timers) clearTimeout(timer);
        stop?.removeEventListener('abort', onStop);
        resolve(late);
      };
      expireAfter(runningMs, false);
      if (stop?.aborted) onStop();
      else stop?.addEventListener('abort', onStop, { once: true });
      send.then(
        () => settle(undefined),
        () => settle(undefined),
      );
    });
  }

  /** Disconnects the sink, waiting at most `DISCONNECT_WITHIN_MS`; a failure is not the relay's concern. */
  private async disconnectSink(): Promise<void> {
    await settlesWithin(this.options.sink.disconnect(), DISCONNECT_WITHIN_MS);
  }

  /**
   * Connects the sink; false when the relay was stopped meanwhile. stop() has not waited for this
   * connect, so it is over for the relay: a connection it made is closed again, and a failure is the
   * outage the stop cut short, nothing to report (the pool may be closed by now).
   */
  private async connectSink(): Promise<boolean> {
    const { sink } = this.options;
    this.connecting = true;
    try {
      await sink.connect();
    } catch (err) {
      if (this.stopped) return false;
      throw err;
    } finally {
      this.connecting = false;
    }
    if (this.stopped) {
      await sink.disconnect().catch(() => undefined);
      return false;
    }
    this.connected = true;
    return true;
  }
}
