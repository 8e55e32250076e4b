/**
 * Consumes the `account.deleted` Redis stream through a consumer group and removes every membership
 * of each deleted account.
 *
 * - Reads up to 32 entries at a time, blocking up to 5 s; acknowledges an entry once its memberships
 *   are gone. A failure is logged and not acknowledged, so the entry stays pending.
 * - On start it first re-reads its own pending list (entries it read before a restart, never acked).
 * - Every `reclaimIntervalMs` it takes over entries idle in any consumer's pending list for more than
 *   `reclaimIdleMs` (XAUTOCLAIM): a consumer that died mid-batch loses nothing.
 * - An entry delivered `maxDeliveries` times without success is moved to the dead-letter stream (with
 *   its source id, delivery count and the last failure) and acknowledged, so a poison entry cannot
 *   loop forever.
 * - Redis being absent or down never blocks start and never touches the HTTP routes: the loop retries
 *   with a delay, and ioredis reconnects with a bounded backoff. A Redis that stays connected but stops
 *   answering (a network that drops packets, no reset) counts as down within seconds, not when TCP
 *   gives up (hours, for the idle-looking blocking read): see {@link redisClient}.
 */
import { hostname } from 'node:os';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { describeError } from '../../shared/errors.js';
import { isUuid } from './policy.js';

export interface AccountDeletedConsumerOptions {
  redisUrl: string;
  /** Removes every membership of an account; the port into storage. */
  removeAccount: (accountId: string) => Promise<unknown>;
  logger: Logger;
  /** Default `account.deleted`. */
  stream?: string;
  /** Default `tenancy`. */
  group?: string;
  /** Default `<stream>.dead`. */
  deadLetterStream?: string;
  /** This instance's name in the group; stable across restarts so its pending list is found again. Default the host name. */
  consumer?: string;
  /** Default 32. */
  batchSize?: number;
  /** Default 5000. */
  blockMs?: number;
  /** Entries pending longer than this are reclaimed. Default 60 000. */
  reclaimIdleMs?: number;
  /** How often to look for such entries. Default 30 000. */
  reclaimIntervalMs?: number;
  /** Deliveries after which a failing entry is dead-lettered. Default 5. */
  maxDeliveries?: number;
  /** Pause after a Redis error before trying again. Default 1000. */
  retryDelayMs?: number;
  /**
   * How long a command waits for Redis's reply, and a connection for any byte while a command waits;
   * the blocking read waits this long beyond its `blockMs`. Default 2000.
   */
  commandTimeoutMs?: number;
}

type StreamEntry = [id: string, fields: string[] | null];

class MalformedEntry extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedEntry';
  }
}

/** The account id an entry carries, or a MalformedEntry error. */
export function accountIdOfEntry(fields: readonly string[]): string {
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === 'accountId') {
      const value = fields[i + 1] ?? '';
      if (!isUuid(value)) throw new MalformedEntry('accountId is not a uuid');
      return value.toLowerCase();
    }
  }
  throw new MalformedEntry('entry has no accountId field');
}

/**
 * A client that gives up on a Redis that stays connected but stops answering (a network that drops
 * packets, no reset); without that, the blocking read waits until the OS gives the connection up, about
 * two hours, and the consumer reads nothing meanwhile.
 * - `commandTimeout` fails a command not answered within `timeoutMs`: the loop logs Redis unavailable
 *   and retries after its delay. The reading client gets its block on top, so a read that blocks and
 *   finds nothing is never taken for a silent Redis;
 * - `socketTimeout` closes a connection that sends nothing for as long while a command waits, and the
 *   client connects again on its own: without it every later command would time out on the same silent
 *   connection;
 * - a command given up on is not sent again on the next connection (`autoResendUnfulfilledCommands`):
 *   a blocking read sent again would take entries into this consumer's pending list with no one left to
 *   handle them until they are reclaimed.
 */
function redisClient(url: string, timeoutMs: number): Redis {
  return new Redis(url, {
    lazyConnect: true,
    connectTimeout: 2000,
    maxRetriesPerRequest: 1,
    commandTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    autoResendUnfulfilledCommands: false,
    // Reconnect forever, never faster than every 250 ms nor slower than every 5 s.
    retryStrategy: (attempt) => Math.min(250 * attempt, 5000),
  });
}

export class AccountDeletedConsumer {
  private readonly options: Required<Omit<AccountDeletedConsumerOptions, 'removeAccount' | 'logger'>>;
  private readonly removeAccount: (accountId: string) => Promise<unknown>;
  private readonly logger: Logger;
  private reader: Redis | undefined;
  private commands: Redis | undefined;
  private loop: Promise<void> | undefined;
  private reclaimTimer: NodeJS.Timeout | undefined;
  private reclaiming: Promise<void> | undefined;
  private stopping = false;
  private groupReady = false;
  private ownPendingDrained = false;
  private wake: (() => void) | undefined;
  private redisDown = false;

  constructor(options: AccountDeletedConsumerOptions) {
    const stream = options.stream ?? 'account.deleted';
    this.options = {
      redisUrl: options.redisUrl,
      stream,
      group: options.group ?? 'tenancy',
      deadLetterStream: options.deadLetterStream ?? `${stream}.dead`,
      consumer: options.consumer ?? hostname(),
      batchSize: options.batchSize ?? 32,
      blockMs: options.blockMs ?? 5000,
      reclaimIdleMs: options.reclaimIdleMs ?? 60_000,
      reclaimIntervalMs: options.reclaimIntervalMs ?? 30_000,
      maxDeliveries: options.maxDeliveries ?? 5,
      retryDelayMs: options.retryDelayMs ?? 1000,
      commandTimeoutMs: options.commandTimeoutMs ?? 2000,
    };
    this.removeAccount = options.removeAccount;
    this.logger = options.logger;
  }

  /** Starts reading in the background; resolves at once, whether or not Redis answers. */
  async start(): Promise<void> {
    this.stopping = false;
    const { redisUrl, blockMs, commandTimeoutMs } = this.options;
    // The reader only ever sends the blocking read.
    this.reader = redisClient(redisUrl, blockMs + commandTimeoutMs);
    this.commands = redisClient(redisUrl, commandTimeoutMs);
    for (const client of [this.reader, this.commands]) {
      client.on('error', (err: Error) => this.noteRedisDown(err));
      client.on('ready', () => this.noteRedisUp());
    }
    this.loop = this.run();
    this.reclaimTimer = setInterval(() => {
      if (!this.reclaiming) this.reclaiming = this.reclaim().finally(() => (this.reclaiming = undefined));
    }, this.options.reclaimIntervalMs);
  }

  /** Stops reading, waits for the entry in hand (bounded), and closes both connections. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.reclaimTimer);
    this.reclaimTimer = undefined;
    this.wake?.();
    // Closing the reading connection ends a blocked XREADGROUP at once.
    this.reader?.disconnect();
    const pending = Promise.allSettled([this.loop, this.reclaiming]);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([pending, new Promise((resolve) => (timer = setTimeout(resolve, 3000)))]);
    clearTimeout(timer);
    this.commands?.disconnect();
    this.reader = undefined;
    this.commands = undefined;
  }

  private noteRedisDown(err: Error): void {
    if (this.redisDown || this.stopping) return;
    this.redisDown = true;
    this.logger.warn({ error: describeError(err) }, 'account-deleted consumer: redis unavailable; retrying');
  }

  private noteRedisUp(): void {
    if (!this.redisDown) return;
    this.redisDown = false;
    this.logger.info('account-deleted consumer: redis available again');
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private async run(): Promise<void> {
    const { stream, group, consumer, batchSize, blockMs } = this.options;
    while (!this.stopping) {
      const reader = this.reader;
      if (!reader) return;
      try {
        if (!this.groupReady) await this.ensureGroup();
        if (!this.ownPendingDrained) await this.drainOwnPending();
        const reply = (await reader.xreadgroup('GROUP', group, consumer, 'COUNT', batchSize, 'BLOCK', blockMs, 'STREAMS', stream, '>')) as
          | [string, StreamEntry[]][]
          | null;
        const entries = reply?.[0]?.[1] ?? [];
        // Entries read with '>' are on their first delivery.
        for (const entry of entries) {
          if (this.stopping) break;
          await this.handle(entry, 1);
        }
      } catch (err) {
        if (this.stopping) return;
        if (/NOGROUP/.test((err as Error).message ?? '')) {
          // The stream or group was deleted (or Redis restarted empty): create it again. Redis answered,
          // so this is no outage; marking one would also silence the warning of the next real outage.
          this.groupReady = false;
          this.ownPendingDrained = false;
          this.logger.info('account-deleted consumer: consumer group missing; creating it again');
        } else {
          this.noteRedisDown(err as Error);
        }
        await this.pause(this.options.retryDelayMs);
      }
    }
  }

  private async ensureGroup(): Promise<void> {
    const commands = this.requireCommands();
    try {
      // From the start of the stream: entries published before the group existed are not skipped.
      await commands.xgroup('CREATE', this.options.stream, this.options.group, '0', 'MKSTREAM');
    } catch (err) {
      if (!/BUSYGROUP/.test((err as Error).message ?? '')) throw err;
    }
    this.groupReady = true;
  }

  /** Re-reads this consumer's own pending entries (read before, never acknowledged). */
  private async drainOwnPending(): Promise<void> {
    const { stream, group, consumer, batchSize } = this.options;
    const commands = this.requireCommands();
    let after = '0';
    for (;;) {
      const reply = (await commands.xreadgroup('GROUP', group, consumer, 'COUNT', batchSize, 'STREAMS', stream, after)) as [string, StreamEntry[]][] | null;
      const entries = reply?.[0]?.[1] ?? [];
      if (entries.length === 0) break;
      await this.handleRedelivered(entries);
      after = entries[entries.length - 1]?.[0] ?? after;
      if (this.stopping) return;
    }
    this.ownPendingDrained = true;
  }

  /** Takes over entries idle longer than reclaimIdleMs in any consumer's pending list. */
  async reclaim(): Promise<void> {
    const { stream, group, consumer, reclaimIdleMs, batchSize } = this.options;
    if (!this.groupReady || this.stopping) return;
    try {
      let cursor = '0-0';
      for (let page = 0; page < 16 && !this.stopping; page++) {
        const commands = this.requireCommands();
        const reply = (await commands.xautoclaim(stream, group, consumer, reclaimIdleMs, cursor, 'COUNT', batchSize)) as [string, StreamEntry[], string[]?];
        await this.handleRedelivered(reply[1]);
        cursor = reply[0];
        if (cursor === '0-0') break;
      }
    } catch (err) {
      if (!this.stopping) this.noteRedisDown(err as Error);
    }
  }

  /** Handles entries that were delivered before, with their delivery counts. */
  private async handleRedelivered(entries: readonly StreamEntry[]): Promise<void> {
    const live = entries.filter((entry) => entry !== null);
    if (live.length === 0) return;
    const first = live[0]?.[0] ?? '-';
    const last = live[live.length - 1]?.[0] ?? '+';
    const commands = this.requireCommands();
    // Other entries of ours may sit between first and last (claimed earlier, not idle enough now), so
    // ask for more than the batch; anything not found is simply left for a later pass.
    const pending = (await commands.xpending(this.options.stream, this.options.group, first, last, Math.min(live.length * 8, 1000), this.options.consumer)) as [
      string,
      string,
      number,
      number,
    ][];
    const deliveries = new Map(pending.map(([id, , , count]) => [id, count]));
    for (const entry of live) {
      if (this.stopping) return;
      const count = deliveries.get(entry[0]);
      // Not in our pending list any more: another instance claimed or acknowledged it meanwhile.
      if (count === undefined) continue;
      await this.handle(entry, count);
    }
  }

  private async handle([id, fields]: StreamEntry, deliveries: number): Promise<void> {
    const commands = this.requireCommands();
    if (fields === null) {
      // Deleted from the stream while pending: nothing left to do but forget it.
      await commands.xack(this.options.stream, this.options.group, id);
      return;
    }
    if (deliveries > this.options.maxDeliveries) {
      await this.deadLetter(id, fields, deliveries, 'delivered too often without success');
      return;
    }
    try {
      const accountId = accountIdOfEntry(fields);
      await this.removeAccount(accountId);
    } catch (err) {
      const reason = describeError(err);
      if (deliveries >= this.options.maxDeliveries) {
        await this.deadLetter(id, fields, deliveries, reason);
      } else {
        this.logger.warn({ entry: id, deliveries, error: reason }, 'account-deleted entry failed; left pending for redelivery');
      }
      return;
    }
    await commands.xack(this.options.stream, this.options.group, id);
  }

  private async deadLetter(id: string, fields: readonly string[], deliveries: number, reason: string): Promise<void> {
    const { stream, group, deadLetterStream } = this.options;
    const result = await this.requireCommands()
      .multi()
      .xadd(deadLetterStream, '*', ...fields, 'sourceStream', stream, 'sourceId', id, 'deliveries', String(deliveries), 'failure', reason)
      .xack(stream, group, id)
      .exec();
    const failed = result?.find(([err]) => err !== null);
    if (!result || failed) throw failed?.[0] ?? new Error('dead-letter transaction discarded');
    this.logger.error({ entry: id, deliveries, error: reason, deadLetterStream }, 'account-deleted entry dead-lettered');
  }

  private requireCommands(): Redis {
    if (!this.commands) throw new Error('consumer is not started');
    return this.commands;
  }
}
