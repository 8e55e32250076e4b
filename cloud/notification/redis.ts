/**
 * The Redis adapter: the shared alert cooldown (`SET key 1 NX EX 300`) and the in-app channel.
 * The client is owned by the caller; with ioredis auto-pipelining, concurrent calls share round trips.
 */
import type { Redis } from 'ioredis';
import type { Notification } from '../../shared/notification.js';

/** The default in-app channel. */
export const NOTIFICATIONS_CHANNEL = 'notifications';
/** Alert cooldown, seconds. */
export const COOLDOWN_SECONDS = 300;

/** Arms a cooldown key once across every replica. */
export interface Cooldown {
  /** True when this call armed the key; false while it is already armed. */
  arm(key: string): Promise<boolean>;
  /** Disarms a key this process armed but could not deliver for, so a redelivery is not suppressed. */
  release(key: string): Promise<void>;
}

/** Publishes an in-app notification. */
export interface Publisher {
  publish(notification: Notification): Promise<void>;
}

export interface RedisAdapterOptions {
  /** Channel name; default `notifications`. */
  channel?: string;
  /** Prepended to every cooldown key (tests isolate with it). Default none. */
  keyPrefix?: string;
  cooldownSeconds?: number;
}

export class RedisCooldown implements Cooldown {
  private readonly prefix: string;
  private readonly seconds: number;
  constructor(
    private readonly redis: Redis,
    options: RedisAdapterOptions = {},
  ) {
    this.prefix = options.keyPrefix ?? '';
    this.seconds = options.cooldownSeconds ?? COOLDOWN_SECONDS;
  }

  async arm(key: string): Promise<boolean> {
    const reply = await this.redis.set(`${this.prefix}${key}`, '1', 'EX', this.seconds, 'NX');
    return reply === 'OK';
  }

  async release(key: string): Promise<void> {
    await this.redis.del(`${this.prefix}${key}`);
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
}
