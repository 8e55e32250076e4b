/**
 * The Redis adapter: the shared alert cooldown (`SET key 1 NX EX 300`), the alertIds already seen
 * (`alert-seen:{alertId}`, 24 h, holding the arming call's token and where the alert stands) and the
 * in-app channel. The client is owned by the caller.
 * The breach path arms and publishes a whole slice of records at once: one script call per thousand
 * keys or messages, with one answer per alert or message.
 *
 * The seen mark is `{token}:{state}`: `P:{record}` the call armed the cooldown for the record at
 * `{record}` (topic/partition/offset) and the alert is not published yet, `1:{publisher}` it armed it
 * and the alert is published by the publish call `{publisher}` (the publish script sets it, in the same
 * call as the alert's last PUBLISH), `0` the cooldown was already armed (suppressed). A pending mark is
 * the only record of an alert armed and never published (the publish failed, the process stopped, a
 * reply was lost), and it lives in Redis, so whichever replica reads that record again delivers it. The
 * publisher, `{replica}.{call}`, tells the call that published an alert from any other (the client's
 * resend of that very call is answered published; a second replica that read the same record is
 * answered published elsewhere and pushes nothing), and tells a replica the alerts its own calls
 * published (see {@link Arming}).
 */
import { randomBytes } from 'node:crypto';
import type { Redis, RedisOptions } from 'ioredis';
import type { Notification } from '../../shared/notification.js';
import { ArmedKeys } from './armed-keys.js';

/** The default in-app channel. */
export const NOTIFICATIONS_CHANNEL = 'notifications';
/** Alert cooldown, seconds. */
export const COOLDOWN_SECONDS = 300;
/** How long an alertId is remembered as seen, seconds: longer than the outbox relay resends or a redelivery takes. */
export const SEEN_SECONDS = 24 * 3600;

/** How long a call waits for Redis's reply, and a connection for any byte while a call waits. */
export const REDIS_TIMEOUT_MS = 2000;

/**
 * The options of the service's Redis client (main.ts creates it; the cooldown, the breach path's publish
 * and /trigger share it). A Redis that stays connected but stops answering (a network that drops
 * packets, no reset) must not hold a call until TCP gives up, about 15 minutes: the slice waiting on it
 * keeps its partitions (the consumer's heartbeat goes on), so no other replica takes them over, and
 * /trigger hangs.
 * - `commandTimeout` fails a call not answered within 2 s. The breach path takes it as a dropped
 *   connection: the records from that call on are not settled, so they are read again and their offsets
 *   are not committed; an alert armed and not published keeps its pending seen mark, and a publish call
 *   that failed without an answer (Redis may have run it) leaves its pushes remembered as owed;
 * - `socketTimeout` closes a connection that sends nothing for 2 s while a call waits, so the next calls
 *   go out on a new connection instead of timing out one by one on the silent one (ioredis also keeps a
 *   timed-out call until its reply comes or the connection closes);
 * - a call given up on is not sent again on the next connection (`autoResendUnfulfilledCommands`), and
 *   without a connection a call fails at once (`enableOfflineQueue: false`), never queued to be sent
 *   once one opens: either would run a call after it was counted as failed, and a /trigger answered
 *   500 would publish all the same. The breach path needs no resend: its records are read again and
 *   armed and published by calls of their own. The client connects again on its own.
 */
export const SERVICE_REDIS_OPTIONS: RedisOptions = {
  enableAutoPipelining: true,
  enableOfflineQueue: false,
  commandTimeout: REDIS_TIMEOUT_MS,
  socketTimeout: REDIS_TIMEOUT_MS,
  autoResendUnfulfilledCommands: false,
};

/**
 * The slice's alerts arm with one script call instead of commands each. KEYS holds two keys per alert,
 * its seen key then its cooldown key; ARGV[1] is the cooldown lifetime, ARGV[2] the seen lifetime,
 * ARGV[3] the call's token, ARGV[4] the replica's publisher id and ARGV[4 + n] the record of the n-th
 * alert. Per alert, in order:
 * - not seen: 1 when this call armed the cooldown (`SET key 1 NX EX 300`, as the seed fixes it), its
 *   mark `{token}:P:{record}`; 0 when it was already armed, its mark `{token}:0`;
 * - pending for this same record (an earlier read of it armed the cooldown and never published: the
 *   publish failed, the process stopped, the reply was lost), whichever token armed it: delivered now.
 *   While that cooldown is still there the answer is 1 when the mark holds this call's own token (the
 *   client resent the call after a lost reply: the cooldown's lifetime counts from this call) and 3
 *   otherwise (armed by an earlier call, here or on another replica; its lifetime is unknown here).
 *   Once it is gone the alert arms it again, as a new alert would. Two replicas reading the same
 *   record at once (a rebalance) are both answered armed, within the one cooldown; the publish call
 *   that runs first delivers it, and the other is answered published elsewhere (PUBLISH_ALL);
 * - `{token}:0` with this call's own token (a resend after a lost reply): 0 again;
 * - published by a call of this replica (`{token}:1:{replica}.{call}`): 4, a duplicate the replica
 *   may owe pushes for (its publish call ran and its reply was lost), its cooldown key not touched;
 * - anything else: 2, a duplicate, its cooldown key not touched. That holds for another record of the
 *   same alertId (a resend) while the first is pending: the first is not settled, so it is read again
 *   and delivered, and the copy is not delivered beside it.
 * Within one run an alertId or a cooldown key is answered for once, so a repeat in the same call is
 * never taken for the caller's own earlier run. The client's cost per command (encoding, a reply to
 * parse, a promise) was most of the cost of arming a slice.
 */
const ARM_ALL = `
local out = {}
local answered = {}
local token = ARGV[3]
local replica = ARGV[4]
for i = 1, #KEYS, 2 do
  local seen, cooldown, record = KEYS[i], KEYS[i + 1], ARGV[4 + (i + 1) / 2]
  local result = 2
  if not answered[seen] then
    local mark = redis.call('GET', seen)
    local holder = mark and string.match(mark, '^([^:]*):P:')
    local again = holder and mark == holder .. ':P:' .. record
    if not mark or (again and not answered[cooldown] and redis.call('EXISTS', cooldown) == 0) then
      result = redis.call('SET', cooldown, '1', 'EX', ARGV[1], 'NX') and 1 or 0
      redis.call('SET', seen, result == 1 and (token .. ':P:' .. record) or (token .. ':0'), 'EX', ARGV[2])
    elseif again and answered[cooldown] then
      result = 0
      redis.call('SET', seen, token .. ':0', 'EX', ARGV[2])
    elseif again then
      result = holder == token and 1 or 3
    elseif mark == token .. ':0' then
      result = 0
    elseif string.match(mark, '^[^:]*:1:([^.]*)%.') == replica then
      result = 4
    end
  end
  answered[seen] = true
  if result == 1 or result == 3 then answered[cooldown] = true end
  out[#out + 1] = result
end
return out`;

/**
 * ARGV[1] the channel, ARGV[2] the call's publisher id (`{replica}.{call}`), then two arguments per
 * message, in order: the message, and the index in KEYS of the seen key of the alert it belongs to (0
 * for none). Each mark is read once, at the start. An alert already marked published (`{token}:1:…`, or
 * `{token}:1` as versions before the publisher id wrote it) is skipped: this very call resent by the
 * client after a lost reply, or a second replica that read the same record. Once an alert's last
 * message is published, its pending mark (`{token}:P:{record}`) becomes `{token}:1:{publisher}`, in the
 * same call.
 *
 * Before anything is published, the call writes once: the first pending mark, rewritten as it is. A Redis
 * that refuses writes (out of memory, read-only, a failing save) refuses a script's first write, so the
 * call fails there with nothing of it sent, and read again it cannot publish twice; past a first write,
 * Redis lets a script finish. A message that cannot be published (the channel refused) fails the call
 * before its alert is marked published, so that alert is delivered when read again. Answers, per KEYS
 * entry, 1 when this call published the alert (now, or in its own run before a resend) and 0 when
 * another call had.
 */
const PUBLISH_ALL = `
local publisher = ARGV[2]
local last = {}
for i = 3, #ARGV, 2 do
  local k = tonumber(ARGV[i + 1])
  if k > 0 then last[k] = i end
end
local marks = {}
local done = {}
local out = {}
for k = 1, #KEYS do
  marks[k] = redis.call('GET', KEYS[k]) or ''
  local by = string.match(marks[k], '^[^:]*:1:(.*)$')
  done[k] = by ~= nil or string.match(marks[k], '^[^:]*:1$') ~= nil
  out[k] = (not done[k] or by == publisher) and 1 or 0
end
for k = 1, #KEYS do
  if string.match(marks[k], '^[^:]*:P:') then
    redis.call('SET', KEYS[k], marks[k], 'KEEPTTL')
    break
  end
end
for i = 3, #ARGV, 2 do
  local k = tonumber(ARGV[i + 1])
  if k == 0 or not done[k] then
    redis.call('PUBLISH', ARGV[1], ARGV[i])
    if k > 0 and last[k] == i then
      local holder = string.match(marks[k], '^([^:]*):P:')
      if holder then redis.call('SET', KEYS[k], holder .. ':1:' .. publisher, 'KEEPTTL') end
    end
  end
end
return out`;

/** Keys (or messages) per script call, so one call never holds Redis for long. */
const KEYS_PER_CALL = 1000;
/** Each alert arms two keys: alerts per script call. */
export const ALERTS_PER_CALL = KEYS_PER_CALL / 2;

interface ScriptedRedis {
  notificationArmAll(numberOfKeys: number, ...args: string[]): Promise<number[]>;
  notificationPublishAll(numberOfKeys: number, ...args: string[]): Promise<number[]>;
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
  /**
   * Where the record sits (`{topic}/{partition}/{offset}`, the parts known): only a read of the same
   * record takes over its pending mark. Default empty.
   */
  record?: string;
}

/**
 * What arming one alert came to: `armed` (deliver it: this call armed the cooldown, or an earlier call
 * did and the alert was never published), `cooling` (the cooldown was already armed), `duplicate` (its
 * alertId was already seen; the cooldown was not touched), or `published-here` (a duplicate whose alert
 * a publish call of this replica published: if that call's reply was lost, the replica still owes the
 * alert's pushes).
 */
export type Arming = 'armed' | 'cooling' | 'duplicate' | 'published-here';

/**
 * What publishing one notification came to: `published` (this call published it), `elsewhere` (its
 * alert was already published by another call, a second replica that read the same record: it was not
 * published again, and its pushes are that call's to send), or why it was not sent.
 */
export type PublishOutcome = 'published' | 'elsewhere' | Error;

/** Arms a cooldown key, and marks an alertId seen, once across every replica. */
export interface Cooldown {
  /**
   * Per alert, in order: marks its alertId seen and, when it was not seen before, arms its cooldown.
   * The same record armed by an earlier read and never published (its seen mark still pending) is
   * answered `armed` again. One script call per five hundred alerts. Answers an error for an alert Redis gave no answer
   * for, and for every alert from a call that failed after an earlier one succeeded (the alerts that
   * call armed are then still delivered); rejects when the first call fails.
   */
  armAll(alerts: readonly AlertKeys[]): Promise<Array<Arming | Error>>;
  /**
   * Stops suppressing from memory the repeats of a key armed here whose alert was not published: read
   * again, that record asks Redis, which finds it armed and not published and answers `armed`. Nothing
   * is released in Redis; the cooldown stays armed.
   */
  forgetArmed(key: string): void;
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
   * Publishes several in order, with one script call per thousand at most. `alertOf[i]` is the seen key
   * of the alert the i-th notification belongs to (an alert's notifications are consecutive): its mark
   * is set published in the call that publishes it, an alert already marked published is not published
   * again (`elsewhere`, unless the call that published it is this one resent after a lost reply), and a
   * call is never cut inside an alert (an alert of more than a thousand goes alone). Per notification,
   * its outcome; when a call fails, why, for its notifications and every later one (not sent). Never
   * rejects.
   */
  publishAll(notifications: readonly Notification[], alertOf: readonly string[]): Promise<PublishOutcome[]>;
}

export interface RedisAdapterOptions {
  /** Channel name; default `notifications`. */
  channel?: string;
  /**
   * Prepended to every cooldown and seen key (tests isolate with it). Default none. The publisher sets
   * the seen marks the cooldown reads: give both the same prefix.
   */
  keyPrefix?: string;
  cooldownSeconds?: number;
  /** How long an alertId is remembered as seen. Default 24 hours. */
  seenSeconds?: number;
  /** Remember keys this process armed until they expire, so repeats skip the round trip. Default true. */
  rememberArmed?: boolean;
  /**
   * This replica's publisher id, written into the marks of the alerts it publishes, by which its
   * cooldown knows them (`published-here`): give the cooldown and the publisher the same. Default one
   * random id per process.
   */
  replicaId?: string;
}

/** The replica id of this process, unless the adapters are given one. */
const PROCESS_REPLICA_ID = randomBytes(9).toString('base64url');

/** A replica id is written into marks between `:` and `.`: it holds neither, nor is it empty. */
function replicaIdOf(options: RedisAdapterOptions): string {
  const id = options.replicaId ?? PROCESS_REPLICA_ID;
  if (!/^[A-Za-z0-9_-]+$/.test(id)) throw new Error('a replica id is letters, digits, "-" and "_" only');
  return id;
}

/**
 * The cooldown, and the alertIds seen, on Redis. A cooldown key this process armed is remembered until
 * it expires: while it lives, a repeat is suppressed without a round trip. That is exact, not a guess:
 * the key was set by this process with a known lifetime (counted from before the command was sent, so
 * the memory never outlives the key), and no one deletes a cooldown key. Keys armed by another
 * replica, or by an earlier call whose alert this call delivers, are always asked of Redis. Every
 * delivered alert went through `armAll`, so its alertId is marked seen. An alert suppressed from memory
 * is not: it is suppressed because its key is armed, and a resend of its alertId after the cooldown
 * expired is a new alert to Redis.
 */
export class RedisCooldown implements Cooldown {
  private readonly prefix: string;
  private readonly seconds: number;
  private readonly seenSeconds: number;
  private readonly remember: boolean;
  private readonly replicaId: string;
  /** key → expiry (performance.now() ms); insertion order is arming order, so expired keys sit first. */
  private readonly armed = new Map<string, number>();
  /** The same keys and expiries, for the scan of a slice's records (made at the first arming). */
  private scanKeys: ArmedKeys | undefined;
  private nextPruneAt = 0;

  constructor(
    private readonly redis: Redis,
    options: RedisAdapterOptions = {},
  ) {
    this.prefix = options.keyPrefix ?? '';
    this.seconds = options.cooldownSeconds ?? COOLDOWN_SECONDS;
    this.seenSeconds = options.seenSeconds ?? SEEN_SECONDS;
    this.remember = options.rememberArmed ?? true;
    this.replicaId = replicaIdOf(options);
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
    // One token per call: the client's resend of the call after a lost reply presents it again.
    const token = randomBytes(12).toString('base64url');
    const replies: unknown[] = [];
    let failure: Error | undefined;
    const lifetimes = [String(this.seconds), String(this.seenSeconds)];
    const replica = this.replicaId;
    for (let start = 0; start < alerts.length; start += ALERTS_PER_CALL) {
      const slice = alerts.slice(start, start + ALERTS_PER_CALL);
      const keys = slice.flatMap((a) => [`${this.prefix}${a.seen}`, `${this.prefix}${a.cooldown}`]);
      try {
        replies.push(...(await this.scripts.notificationArmAll(keys.length, ...keys, ...lifetimes, token, replica, ...slice.map((a) => a.record ?? ''))));
      } catch (err) {
        // Redis may have run the call before the connection dropped: its alerts are then pending in
        // Redis, and arming their records again answers `armed`. The earlier calls' alerts are answered and
        // delivered now; only this call's alerts and the ones after it fail.
        if (start === 0) throw err;
        failure = err instanceof Error ? err : new Error('redis refused the call');
        break;
      }
    }
    return alerts.map(({ cooldown }, i) => {
      const reply = replies[i];
      if (reply === 2) return 'duplicate';
      if (reply === 4) return 'published-here';
      if (reply === 0) return 'cooling';
      // Armed by an earlier call: its lifetime is not known here, so it is not remembered.
      if (reply === 3) return 'armed';
      if (reply !== 1) return failure ?? new Error('no reply from redis');
      if (this.remember) {
        const until = sentAt + this.seconds * 1000;
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

  forgetArmed(key: string): void {
    this.armed.delete(key);
    this.scanKeys?.delete(key);
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

/**
 * The script calls of a publish, as [start, end) ranges: at most KEYS_PER_CALL messages each, cut only
 * where an alert ends (`endsAlert`); an alert of more messages goes alone.
 */
function callsOf(count: number, endsAlert: (index: number) => boolean): Array<[number, number]> {
  const calls: Array<[number, number]> = [];
  let start = 0;
  // One past the last alert that ended since `start`.
  let cut = 0;
  for (let i = 0; i < count; i++) {
    if (i - start >= KEYS_PER_CALL && cut > start) {
      calls.push([start, cut]);
      start = cut;
    }
    if (endsAlert(i)) cut = i + 1;
  }
  if (start < count) calls.push([start, count]);
  return calls;
}

export class RedisPublisher implements Publisher {
  private readonly channel: string;
  private readonly prefix: string;
  private readonly replicaId: string;
  constructor(
    private readonly redis: Redis,
    options: RedisAdapterOptions = {},
  ) {
    this.channel = options.channel ?? NOTIFICATIONS_CHANNEL;
    this.prefix = options.keyPrefix ?? '';
    this.replicaId = replicaIdOf(options);
  }

  private get scripts(): ScriptedRedis {
    return scripted(this.redis);
  }

  async publish(notification: Notification): Promise<void> {
    await this.redis.publish(this.channel, JSON.stringify(notification));
  }

  async publishAll(notifications: readonly Notification[], alertOf: readonly string[]): Promise<PublishOutcome[]> {
    const outcomes = new Array<PublishOutcome>(notifications.length).fill('published');
    const endsAlert = (i: number) => alertOf[i + 1] !== alertOf[i];
    for (const [start, end] of callsOf(notifications.length, endsAlert)) {
      const keys: string[] = [];
      // Per notification of the call, the index of its alert's seen key in `keys`.
      const owner: number[] = [];
      // One publisher id per call: the client's resend of the call after a lost reply presents it again.
      const args: string[] = [this.channel, `${this.replicaId}.${randomBytes(12).toString('base64url')}`];
      for (let i = start; i < end; i++) {
        if (i === start || alertOf[i - 1] !== alertOf[i]) keys.push(`${this.prefix}${alertOf[i]}`);
        args.push(JSON.stringify(notifications[i]), String(keys.length));
        owner.push(keys.length - 1);
      }
      let answers: number[];
      try {
        answers = await this.scripts.notificationPublishAll(keys.length, ...keys, ...args);
      } catch (err) {
        // A call refused at its first write sent nothing; one that failed later sent whole alerts,
        // marked published (skipped when read again), and at most part of the alert it failed on, which
        // stays pending. The later calls are not sent, so notifications keep their order.
        outcomes.fill(err instanceof Error ? err : new Error('redis refused the publish'), start);
        break;
      }
      for (let i = start; i < end; i++) if (answers[owner[i - start] as number] === 0) outcomes[i] = 'elsewhere';
    }
    return outcomes;
  }
}
