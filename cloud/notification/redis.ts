/**
 * The Redis adapter: the shared alert cooldown (`SET key 1 NX EX 300`), the alertIds already seen
 * (`alert-seen:{alertId}`, 24 h, holding the arming call's token and what it came to) and the in-app
 * channel. The client is owned by the caller.
 * The breach path arms and publishes a whole slice of records at once: one script call per thousand
 * keys or messages, with one answer per alert or message.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Notification } from '../../shared/notification.js';
import { ArmedKeys } from './armed-keys.js';
import { rememberBounded } from './bounded-memory.js';

/** The default in-app channel. */
export const NOTIFICATIONS_CHANNEL = 'notifications';
/** Alert cooldown, seconds. */
export const COOLDOWN_SECONDS = 300;
/** How long an alertId is remembered as seen, seconds: longer than the outbox relay resends or a redelivery takes. */
export const SEEN_SECONDS = 24 * 3600;

/**
 * The slice's alerts arm with one script call instead of commands each. KEYS holds two keys per alert,
 * its seen key then its cooldown key; ARGV[1] is the cooldown lifetime, ARGV[2] the seen lifetime, and
 * ARGV[2 + n] the token of the n-th alert. Per alert, in order: 2 when its alertId was already seen (its
 * cooldown key is not touched), else 1 when this call armed the cooldown (`SET key 1 NX EX 300`, as
 * the seed fixes it) or 0 when it was already armed. The seen mark holds `{token}:{answer}`. The
 * client's cost per command (encoding, a reply to parse, a promise) was most of the cost of arming a
 * slice.
 *
 * A seen mark holding the alert's own token was set by an earlier run of the same arming whose reply
 * never arrived (the connection dropped after Redis ran it: the client resends the call on reconnect,
 * or the record is read again). That run's answer is given again, from the mark, instead of 2:
 * otherwise the alert would be counted a duplicate of itself and never delivered. It is 1 only while
 * the cooldown it armed is still there (a release deleted both keys; an expired cooldown delivers
 * nothing late). Within one run an alertId or a cooldown key is answered for once, so a repeat in the
 * same call is never taken for the caller's own earlier run.
 */
const ARM_ALL = `
local out = {}
local answered = {}
for i = 1, #KEYS, 2 do
  local seen, cooldown, token = KEYS[i], KEYS[i + 1], ARGV[2 + (i + 1) / 2]
  local result = 2
  if answered[seen] then
    result = 2
  else
    local mark = redis.call('GET', seen)
    if not mark then
      result = redis.call('SET', cooldown, '1', 'EX', ARGV[1], 'NX') and 1 or 0
      redis.call('SET', seen, token .. ':' .. result, 'EX', ARGV[2])
    elseif mark == token .. ':1' then
      result = (not answered[cooldown] and redis.call('EXISTS', cooldown) == 1) and 1 or 0
    elseif mark == token .. ':0' then
      result = 0
    end
  end
  answered[seen] = true
  if result == 1 then answered[cooldown] = true end
  out[#out + 1] = result
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
/** Each alert arms two keys: alerts per script call. */
export const ALERTS_PER_CALL = KEYS_PER_CALL / 2;
/** Alerts whose arming went unanswered, remembered at most; past it the oldest is forgotten. */
const MAX_IN_DOUBT = 100_000;

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

/** The two keys of one alert: its cooldown key and the key that marks its alertId seen. */
export interface AlertKeys {
  cooldown: string;
  seen: string;
}

/**
 * What arming one alert came to: `armed` by this call, `cooling` (the cooldown was already armed), or
 * `duplicate` (its alertId was already seen; the cooldown was not touched).
 */
export type Arming = 'armed' | 'cooling' | 'duplicate';

/** Arms a cooldown key, and marks an alertId seen, once across every replica. */
export interface Cooldown {
  /**
   * Per alert, in order: marks its alertId seen and, when it was not seen before, arms its cooldown.
   * One script call per five hundred alerts. Answers an error for an alert Redis gave no answer for,
   * and for every alert from a call that failed after an earlier one succeeded (the alerts that call
   * armed are then still delivered); rejects when the first call fails.
   */
  armAll(alerts: readonly AlertKeys[]): Promise<Array<Arming | Error>>;
  /**
   * Disarms an alert this process armed but could not deliver: its cooldown and its seen mark, so a
   * redelivery is neither suppressed nor taken for a duplicate.
   */
  release(alert: AlertKeys): Promise<void>;
  /** True while a key this process armed is certainly still armed: answered without a round trip. */
  armedHere(key: string, now?: number): boolean;
  /**
   * Per record of a slice, 1 when it is certainly an alert that `armedHere` suppresses at `now`, read
   * from its bytes alone; 0 when the general path must decide. Undefined when nothing is armed here.
   */
  suppressedHere?(records: ReadonlyArray<{ value: Buffer | null }>, now: number): Uint8Array | undefined;
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
  /** How long an alertId is remembered as seen. Default 24 hours. */
  seenSeconds?: number;
  /** Remember keys this process armed until they expire, so repeats skip the round trip. Default true. */
  rememberArmed?: boolean;
}

/**
 * The cooldown, and the alertIds seen, on Redis. A cooldown key this process armed is remembered until
 * it expires: while it lives, a repeat is suppressed without a round trip. That is exact, not a guess:
 * the key was set by this process with a known lifetime (counted from before the command was sent, so
 * the memory never outlives the key), and only the process that armed a key ever deletes it. Keys
 * armed by another replica are always asked of Redis. Every delivered alert went through `armAll`, so
 * its alertId is marked seen; an alert suppressed from memory is not, and need not be.
 */
export class RedisCooldown implements Cooldown {
  private readonly prefix: string;
  private readonly seconds: number;
  private readonly seenSeconds: number;
  private readonly remember: boolean;
  /** key → expiry (performance.now() ms); insertion order is arming order, so expired keys sit first. */
  private readonly armed = new Map<string, number>();
  /** The same keys and expiries, for the scan of a slice's records (made at the first arming). */
  private scanKeys: ArmedKeys | undefined;
  /**
   * seen key → the token, and send time, of an arming call that failed without an answer (Redis may
   * have run it). The next arming of that alert presents the same token, so it gets that run's answer
   * rather than finding the alertId seen. Insertion order is age.
   */
  private readonly inDoubt = new Map<string, { token: string; sentAt: number }>();
  private nextPruneAt = 0;

  constructor(
    private readonly redis: Redis,
    options: RedisAdapterOptions = {},
  ) {
    this.prefix = options.keyPrefix ?? '';
    this.seconds = options.cooldownSeconds ?? COOLDOWN_SECONDS;
    this.seenSeconds = options.seenSeconds ?? SEEN_SECONDS;
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

  async armAll(alerts: readonly AlertKeys[]): Promise<Array<Arming | Error>> {
    if (alerts.length === 0) return [];
    const sentAt = performance.now();
    const callToken = randomBytes(12).toString('base64url');
    const earlier = alerts.map(({ seen }) => this.inDoubt.get(seen));
    const tokens = earlier.map((doubt) => doubt?.token ?? callToken);
    const replies: unknown[] = [];
    let failure: Error | undefined;
    const lifetimes = [String(this.seconds), String(this.seenSeconds)];
    for (let start = 0; start < alerts.length; start += ALERTS_PER_CALL) {
      const slice = alerts.slice(start, start + ALERTS_PER_CALL);
      const keys = slice.flatMap((a) => [`${this.prefix}${a.seen}`, `${this.prefix}${a.cooldown}`]);
      try {
        replies.push(...(await this.scripts.notificationArmAll(keys.length, ...keys, ...lifetimes, ...tokens.slice(start, start + slice.length))));
      } catch (err) {
        // Redis may have run the call before the connection dropped: its alerts keep their tokens, so
        // arming them again recognizes their own marks.
        slice.forEach((a, i) => rememberBounded(this.inDoubt, a.seen, { token: tokens[start + i] as string, sentAt: earlier[start + i]?.sentAt ?? sentAt }, MAX_IN_DOUBT));
        // The earlier calls marked their alerts seen: rejecting would have them read again as
        // duplicates and never delivered. Only this call's alerts and the ones after it fail.
        if (start === 0) throw err;
        failure = err instanceof Error ? err : new Error('redis refused the call');
        break;
      }
    }
    return alerts.map(({ cooldown, seen }, i) => {
      const reply = replies[i];
      if (reply === 0 || reply === 1 || reply === 2) this.inDoubt.delete(seen);
      if (reply === 2) return 'duplicate';
      if (reply === 0) return 'cooling';
      if (reply !== 1) return failure ?? new Error('no reply from redis');
      if (this.remember) {
        // An earlier unanswered call may have set the key: its lifetime counts from that call.
        const until = (earlier[i]?.sentAt ?? sentAt) + this.seconds * 1000;
        this.armed.delete(cooldown);
        this.armed.set(cooldown, until);
        this.scanKeys ??= new ArmedKeys();
        this.scanKeys.set(cooldown, until, sentAt);
      }
      return 'armed';
    });
  }

  suppressedHere(records: ReadonlyArray<{ value: Buffer | null }>, now: number): Uint8Array | undefined {
    if (!this.remember) return undefined;
    return this.scanKeys?.scan(records, now);
  }

  async release(alert: AlertKeys): Promise<void> {
    this.armed.delete(alert.cooldown);
    this.scanKeys?.delete(alert.cooldown);
    await this.redis.del(`${this.prefix}${alert.cooldown}`, `${this.prefix}${alert.seen}`);
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
