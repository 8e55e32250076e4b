/**
 * The broker port of the relay and its Redis adapter (ioredis).
 *
 * ioredis's own reconnect is switched off on purpose: after any failure (refused at start, dropped
 * mid-stream, a subscribe that errors, a heartbeat that goes unanswered, a client ioredis refuses to
 * build) this adapter throws the connection away, logs, waits `retryDelayMs` (1 s) and opens a fresh one
 * that subscribes again, forever.
 * One loop owns reconnection, so a subscription can never silently stay lost.
 */
import { Redis } from 'ioredis';
import type { Logger } from '../../shared/logger.js';
import { describeError } from '../../shared/errors.js';

/** One message as the broker delivered it. */
export interface BrokerMessage {
  channel: string;
  payload: Buffer;
}

/** The port the relay depends on. */
export interface BrokerSubscriber {
  /** Starts subscribing in the background; never rejects because the broker is down. */
  start(onMessage: (message: BrokerMessage) => void): Promise<void>;
  /** Unsubscribes, closes the connection and stops retrying. */
  stop(): Promise<void>;
  /** Resolves when the subscriptions are live (at once if they are). */
  subscribed(): Promise<void>;
}

export interface RedisSubscriberOptions {
  url: string;
  channels: readonly string[];
  patterns: readonly string[];
  logger: Logger;
  /** Wait between a failure and the next attempt. Default 1000 ms. */
  retryDelayMs?: number;
  /** A PING this often detects a connection that died without closing. Default 15 000 ms; 0 disables. */
  heartbeatMs?: number;
  /** Connecting and subscribing must finish within this, or the attempt counts as failed. Default 10 000 ms. */
  setupTimeoutMs?: number;
  /** Name shown in CLIENT LIST. */
  connectionName?: string;
}

export class RedisSubscriber implements BrokerSubscriber {
  private running = false;
  private live = false;
  private client: Redis | undefined;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private waiters: Array<() => void> = [];
  private onMessage: (message: BrokerMessage) => void = () => undefined;

  constructor(private readonly options: RedisSubscriberOptions) {}

  async start(onMessage: (message: BrokerMessage) => void): Promise<void> {
    if (this.running) return;
    this.onMessage = onMessage;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wakeUp?.();
    const client = this.client;
    if (client) {
      try {
        await Promise.race([client.quit(), new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
      } catch {
        // already closed: nothing to quit
      }
      client.disconnect();
    }
    await this.loop;
    this.loop = undefined;
  }

  subscribed(): Promise<void> {
    if (this.live) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private async run(): Promise<void> {
    const { logger } = this.options;
    const retryDelayMs = this.options.retryDelayMs ?? 1000;
    let attempt = 0;
    while (this.running) {
      attempt++;
      // A session that throws (ioredis's constructor does, on a URL it cannot decode) is a failed attempt
      // like any other: otherwise the loop's promise rejects with nobody awaiting it until stop(), and the
      // process dies of an unhandled rejection.
      const failure = await this.session().catch((err: unknown) => describeError(err));
      this.live = false;
      if (!this.running) break;
      logger.warn({ error: failure, attempt, retryInMs: retryDelayMs }, 'broker subscription lost; retrying');
      await this.sleep(retryDelayMs);
    }
  }

  /** One connection's life: connect, subscribe, relay until it ends. Resolves with why it ended. */
  private async session(): Promise<string> {
    const { url, channels, patterns, logger } = this.options;
    const client = new Redis(url, {
      lazyConnect: true,
      retryStrategy: () => null,
      autoResubscribe: false,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: 5000,
      keepAlive: 10_000,
      connectionName: this.options.connectionName ?? 'lintel-relay',
    });
    this.client = client;
    // Why this attempt ended; the first explanation wins.
    let failure: string | undefined;
    const fail = (reason: string) => (failure ??= reason);
    client.on('error', (err) => fail(describeError(err)));
    const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
    client.on('messageBuffer', (channel: Buffer, payload: Buffer) => this.deliver(channel, payload));
    client.on('pmessageBuffer', (_pattern: string, channel: Buffer, payload: Buffer) => this.deliver(channel, payload));
    let heartbeat: NodeJS.Timeout | undefined;
    // A server that accepts the connection but never answers would otherwise stall this attempt forever.
    const setupTimeoutMs = this.options.setupTimeoutMs ?? 10_000;
    const setupTimer = setTimeout(() => {
      fail(`no subscription within ${setupTimeoutMs} ms`);
      client.disconnect();
    }, setupTimeoutMs);
    try {
      await client.connect();
      if (channels.length > 0) await client.subscribe(...channels);
      if (patterns.length > 0) await client.psubscribe(...patterns);
      if (!this.running) throw new Error('stopping');
      if (client.status !== 'ready') throw new Error('connection lost while subscribing');
      this.live = true;
      logger.info({ channels, patterns }, 'broker subscribed');
      for (const resolve of this.waiters.splice(0)) resolve();
      heartbeat = this.startHeartbeat(client, fail);
    } catch (err) {
      fail(describeError(err));
      client.disconnect();
    } finally {
      clearTimeout(setupTimer);
    }
    if (client.status !== 'end') await ended;
    if (heartbeat) clearInterval(heartbeat);
    client.removeAllListeners();
    client.on('error', () => undefined);
    if (this.client === client) this.client = undefined;
    return failure ?? 'connection closed';
  }

  private startHeartbeat(client: Redis, fail: (reason: string) => void): NodeJS.Timeout | undefined {
    const every = this.options.heartbeatMs ?? 15_000;
    if (every <= 0) return undefined;
    let awaiting = false;
    return setInterval(() => {
      if (awaiting) {
        fail('heartbeat unanswered');
        client.disconnect();
        return;
      }
      awaiting = true;
      client.ping().then(
        () => (awaiting = false),
        (err: unknown) => {
          fail(describeError(err));
          client.disconnect();
        },
      );
    }, every);
  }

  private deliver(channel: Buffer, payload: Buffer): void {
    try {
      this.onMessage({ channel: channel.toString('utf8'), payload });
    } catch (err) {
      this.options.logger.error({ error: describeError(err) }, 'broker message handler failed');
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = done;
    }).finally(() => (this.wakeUp = undefined));
  }
}
