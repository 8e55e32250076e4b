/**
 * The Redis adapter: the shared alert cooldown (`SET key 1 NX EX 300`) and the in-app channel.
 * The client is owned by the caller. The breach path arms and publishes a whole slice of records at
 * once: one script call per thousand keys or messages, with one answer per key.
 */
import type { Redis } from 'ioredis';
import type { Notification } from '../../shared/notification.js';

/** The default in-app channel. */
export const NOTIFICATIONS_CHANNEL = 'notifications';
/** Alert cooldown, seconds. */
export const COOLDOWN_SECONDS = 300;

/**
 * The slice's keys arm with one script call instead of one command each: `SET key 1 EX ttl NX` per
 * KEYS entry, answering 1 (armed by this call) or 0 (already armed) per key, in order. The client's
 * cost per command (encoding, a reply to parse, a promise) was most of the cost of arming a slice.
 */
const ARM_ALL = `
local out = {}
for i, key in ipairs(KEYS) do
  out[i] = redis.call('SET', key, '1', 'EX', ARGV[1], 'NX') and 1 or 0
end
return out`;

/** ARGV[1] the channel, then one message per argument, published in order. Answers how many. */
const PUBLISH_ALL = `
for i = 2, #ARGV do
  redis.call('PUBLISH', ARGV[1], ARGV[i])
end
return #ARGV - 1`;

/** Keys (or messages) per script call, so one call never holds Redis for long. */
const KEYS_PER_CALL = 1000;

interface ScriptedRedis {
  notificationArmAll(numberOfKeys: number, ...args: string[]): Promise<number[]>;
  notificationPublishAll(numberOfKeys: number, ...args: string[]): Promise<number>;
}

/** The scripts, defined once on the client (EVALSHA, with EVAL when the server does not know them). */
function scripted(redis: Redis): ScriptedRedis {
  const client = redis as Redis & Partial<ScriptedRedis>;
  if (typeof client.notificationArmAll !== 'function') redis.defineCommand('notificationArmAll', { lua: ARM_ALL });
  if (typeof client.notificationPublishAll !== 'function') redis.defineCommand('notificationPublishAll', { lua: PUBLISH_ALL });
  return client as Redis & ScriptedRedis;
}

/** Arms a cooldown key once across every replica. */
export interface Cooldown {
  /**
   * Arms every key, with one script call per thousand keys. Per key: true when this call armed it,
   * false while it was already armed, or an error when Redis gave no answer for it. Rejects when Redis
   * cannot be reached or refuses the call.
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
   * Publishes several, with one script call per thousand. Per notification: undefined when
   * published. Rejects when Redis cannot be reached or refuses the call.
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

  private get scripts(): ScriptedRedis {
    return scripted(this.redis);
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
    const replies: unknown[] = [];
    for (let start = 0; start < keys.length; start += KEYS_PER_CALL) {
      const chunk = keys.slice(start, start + KEYS_PER_CALL).map((key) => `${this.prefix}${key}`);
      replies.push(...(await this.scripts.notificationArmAll(chunk.length, ...chunk, String(this.seconds))));
    }
    const until = sentAt + this.seconds * 1000;
    return keys.map((key, i) => {
      const reply = replies[i];
      if (reply === undefined) return new Error('no reply from redis');
      if (reply !== 1) return false;
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

  private get scripts(): ScriptedRedis {
    return scripted(this.redis);
  }

  async publish(notification: Notification): Promise<void> {
    await this.redis.publish(this.channel, JSON.stringify(notification));
  }

  async publishAll(notifications: readonly Notification[]): Promise<Array<Error | undefined>> {
    if (notifications.length === 0) return [];
    for (let start = 0; start < notifications.length; start += KEYS_PER_CALL) {
      const messages = notifications.slice(start, start + KEYS_PER_CALL).map((n) => JSON.stringify(n));
      await this.scripts.notificationPublishAll(0, this.channel, ...messages);
    }
    return notifications.map(() => undefined);
  }
}
