/**
 * The Redis adapter: the shared alert cooldown (`SET key 1 NX EX 300`) and the in-app channel.
 * The client is owned by the caller. The breach path arms and publishes a whole slice of records at
 * once: one pipelined round trip each, with one answer per command.
 */
import type { Redis } from 'ioredis';
import type { Notification } from '../../shared/notification.js';

/** The default in-app channel. */
export const NOTIFICATIONS_CHANNEL = 'notifications';
/** Alert cooldown, seconds. */
export const COOLDOWN_SECONDS = 300;

/** Arms a cooldown key once across every replica. */
export interface Cooldown {
  /**
   * Arms every key, in one round trip. Per key: true when this call armed it, false while it was
   * already armed, or the error Redis answered for that key. Rejects when Redis cannot be reached.
   */
  armAll(keys: readonly string[]): Promise<Array<boolean | Error>>;
  /** Disarms a key this process armed but could not deliver for, so a redelivery is not suppressed. */
  release(key: string): Promise<void>;
  /** True while a key this process armed is certainly still armed: answered without a round trip. */
  armedHere(key: string, now?: number): boolean;
}

/** Publishes an in-app notification. */
export interface Publisher {
  publish(notification: Notification): Promise<void>;
  /**
   * Publishes several, in one round trip. Per notification: undefined when published, or the error
   * Redis answered for it. Rejects when Redis cannot be reached.
   */
  publishAll(notifications: readonly Notification[]): Promise<Array<Error | undefined>>;
}

export interface RedisAdapterOptions {
  /** Channel name; default `notifications`. */
  channel?: string;
  /** Prepended to every cooldown key (tests isolate with it). Default none. */
  keyPrefix?: string;
  cooldownSeconds?: number;
  /** Remember keys this process armed until they expire, so repeats skip the round trip. Default true. */
  rememberArmed?: boolean;
}

/**
 * The cooldown on Redis. A key this process armed is remembered until it expires: while it lives, a
 * repeat is suppressed without a round trip. That is exact, not a guess: the key was set by this
 * process with a known lifetime (counted from before the command was sent, so the memory never
 * outlives the key), and only the process that armed a key ever deletes it. Keys armed by another
 * replica are always asked of Redis.
 */
export class RedisCooldown implements Cooldown {
  private readonly prefix: string;
  private readonly seconds: number;
  private readonly remember: boolean;
  /** key → expiry (performance.now() ms); insertion order is arming order, so expired keys sit first. */
  private readonly armed = new Map<string, number>();
  private nextPruneAt = 0;

  constructor(
    private readonly redis: Redis,
    options: RedisAdapterOptions = {},
  ) {
    this.prefix = options.keyPrefix ?? '';
    this.seconds = options.cooldownSeconds ?? COOLDOWN_SECONDS;
    this.remember = options.rememberArmed ?? true;
  }

  /** `now` is performance.now(), passed by callers that check many keys at one moment. */
  armedHere(key: string, now = performance.now()): boolean {
    if (!this.remember) return false;
    this.forgetExpired(now);
    const until = this.armed.get(key);
    return until !== undefined && until > now;
  }

  async armAll(keys: readonly string[]): Promise<Array<boolean | Error>> {
    if (keys.length === 0) return [];
    const sentAt = performance.now();
    const pipeline = this.redis.pipeline();
    for (const key of keys) pipeline.set(`${this.prefix}${key}`, '1', 'EX', this.seconds, 'NX');
    const replies = await pipeline.exec();
    const until = sentAt + this.seconds * 1000;
    return keys.map((key, i) => {
      const [error, reply] = replies?.[i] ?? [new Error('no reply from redis'), null];
      if (error) return error;
      if (reply !== 'OK') return false;
      if (this.remember) {
        this.armed.delete(key);
        this.armed.set(key, until);
      }
      return true;
    });
  }

  async release(key: string): Promise<void> {
    this.armed.delete(key);
    await this.redis.del(`${this.prefix}${key}`);
  }

  /** Drops expired keys, at most once a second: a stale entry is harmless, its expiry is checked on read. */
  private forgetExpired(now: number): void {
    if (now < this.nextPruneAt) return;
    this.nextPruneAt = now + 1000;
    for (const [key, until] of this.armed) {
      if (until > now) return;
      this.armed.delete(key);
    }
  }
}

export class RedisPublisher implements Publisher {
  private readonly channel: string;
  constructor(
    private readonly redis: Redis,
    options: RedisAdapterOptions = {},
  ) {
    this.channel = options.channel ?? NOTIFICATIONS_CHANNEL;
  }

  async publish(notification: Notification): Promise<void> {
    await this.redis.publish(this.channel, JSON.stringify(notification));
  }

  async publishAll(notifications: readonly Notification[]): Promise<Array<Error | undefined>> {
    if (notifications.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const notification of notifications) pipeline.publish(this.channel, JSON.stringify(notification));
    const replies = await pipeline.exec();
    return notifications.map((_, i) => {
      const reply = replies?.[i];
      return reply === undefined ? new Error('no reply from redis') : (reply[0] ?? undefined);
    });
  }
}
