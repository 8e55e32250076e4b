/**
 * Serializes the writes to one conversation document.
 *
 * Why: FerretDB 1.24 (our MongoDB-wire server) applies an update by reading the document, changing it
 * in FerretDB's own process and writing the whole document back by `_id`. Two concurrent updates of one
 * document therefore lose one another's changes, `$push` and `$inc` included, and a conditional filter
 * (the message cap) is checked against a read that may already be stale. A delete is a read and then a
 * delete by `_id` too. What PostgreSQL refuses atomically is an insert that breaks a unique index
 * (E11000), so the lock is a lease document: one per taking, under an `_id` of its own, with the
 * conversation's id in a field under a unique index. Every later write to a lease (renewal, release, a
 * crashed holder's lease removed) names that taking's `_id`, so it can never reach a lease another
 * replica took meanwhile. On MongoDB proper the guarded update is atomic by itself and the lease costs
 * two small round trips.
 *
 * Two layers: a FIFO chain per conversation inside this process (so concurrent sends of one replica
 * queue instead of polling), then the lease document (so replicas exclude each other).
 *
 * A lease's `expires_at` is stamped by its holder's wall clock, and replicas' clocks disagree (skew, an
 * NTP step). So no replica compares another's stamp with its own clock: a waiter takes a lease over only
 * once it has seen the same stamp, unchanged, for a whole lease on its own monotonic clock. Every
 * renewal writes a new stamp, so a holder still renewing is never taken over, whatever the clocks say.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Collection } from 'mongodb';
import { settlesWithin } from '../../shared/lifecycle.js';

export interface LeaseDocument {
  /** This taking of the lease: a fresh UUID each time. */
  _id: string;
  /** The conversation locked; unique across the collection ({@link LEASE_INDEX}). */
  conversation: string;
  /**
   * When the holder's clock says the lease ends unless renewed. Other replicas only watch it change (a
   * renewal); they never compare it with their own clocks.
   */
  expires_at: Date;
}

/** The collection of leases. A new name: the leases of earlier releases were keyed otherwise. */
export const LEASE_COLLECTION = 'conversation_leases';

/** One lease per conversation, refused atomically by the database. */
export const LEASE_INDEX = { key: { conversation: 1 } as const, name: 'conversation_unique' };

export interface ConversationLockOptions {
  /**
   * How long a lease holds unless renewed, before another writer may take it over (a crashed holder):
   * a waiter takes it over once it has seen it unrenewed for this long, on its own monotonic clock. The
   * holder renews it every third of this while its work runs.
   */
  leaseMs: number;
  /**
   * How long a writer waits for the lock before giving up with {@link LockTimeoutError}, counted from
   * the call on the monotonic clock: the writers ahead of it in this process and then the lease share it.
   */
  waitMs: number;
  /** Base pause between attempts while another replica holds the lease. */
  pollMs: number;
}

export const DEFAULT_LOCK_OPTIONS: ConversationLockOptions = { leaseMs: 10_000, waitMs: 15_000, pollMs: 5 };

/** The lock stayed taken (by writers of this process or another replica's lease) longer than the wait allows. */
export class LockTimeoutError extends Error {
  constructor(key: string) {
    super(`conversation ${key} is busy`);
    this.name = 'LockTimeoutError';
  }
}

/** The wait was abandoned because the service is stopping (see {@link ConversationLock.abandonWaits}). */
export class LockAbandonedError extends Error {
  constructor(key: string) {
    super(`stopped waiting for conversation ${key}: the service is stopping`);
    this.name = 'LockAbandonedError';
  }
}

/**
 * The holder's lease was gone when it renewed it: another replica took it over (it saw no renewal for
 * a whole lease) or it was removed. What the work wrote may have raced another writer's, so the work is
 * not reported done.
 */
export class LeaseLostError extends Error {
  constructor(key: string) {
    super(`this replica lost its lease on conversation ${key} while its write ran; another writer may have written at the same time`);
    this.name = 'LeaseLostError';
  }
}

const DUPLICATE_KEY = 11000;

/** True for the error of an insert refused by a unique index (E11000). */
export function isDuplicateKey(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === DUPLICATE_KEY;
}

/** One taking of a lease: its `_id` and the expiry it was inserted with. */
interface Taking {
  id: string;
  expiresAt: Date;
}

/** A held lease kept renewed while its work runs. */
interface Renewal {
  /** Stops renewing; resolves once no renewal is in flight, so none lands after the release. */
  stop(): Promise<void>;
  /** True once a renewal found the lease gone. */
  lost(): boolean;
}

/**
 * Another replica's lease as a waiter saw it: which taking, its last stamp, and since when (this
 * replica's monotonic clock) the waiter has seen that stamp unchanged.
 */
interface Sighting {
  id: string;
  stamp: number;
  since: number;
}

/** The sighting after seeing `holder` at `now`: the same one while neither its taking nor its stamp changed. */
function sightingOf(previous: Sighting | undefined, holder: LeaseDocument, now: number): Sighting {
  const stamp = holder.expires_at.getTime();
  if (previous && previous.id === holder._id && previous.stamp === stamp) return previous;
  return { id: holder._id, stamp, since: now };
}

/** A renewal's stamp: from this clock, but always later than the last, so a clock stepped back still changes it. */
function nextStamp(previous: Date, leaseMs: number): Date {
  return new Date(Math.max(Date.now() + leaseMs, previous.getTime() + 1));
}

export class ConversationLock {
  private readonly leases: Collection<LeaseDocument>;
  private readonly options: ConversationLockOptions;
  private readonly queues = new Map<string, Promise<void>>();
  /**
   * What abandons each wait running now, removed when the wait ends. One per wait, not one promise
   * every wait races against: a promise pending for the life of the process would keep a reaction of
   * every wait ever raced against it (about 300 bytes a write, more for a wait on another replica).
   */
  private readonly waits = new Set<() => void>();
  private waitsAbandoned = false;
  private indexed: Promise<unknown> | undefined;

  constructor(leases: Collection<LeaseDocument>, options: Partial<ConversationLockOptions> = {}) {
    this.leases = leases;
    this.options = { ...DEFAULT_LOCK_OPTIONS, ...options };
  }

  /**
   * Creates the unique index the leases rely on. Idempotent; the first lock taken waits for it too, so
   * no lease is ever taken without it.
   */
  async start(): Promise<void> {
    await this.ensureIndex();
  }

  private ensureIndex(): Promise<unknown> {
    this.indexed ??= this.leases.createIndex(LEASE_INDEX.key, { name: LEASE_INDEX.name, unique: true }).catch((err: unknown) => {
      this.indexed = undefined;
      throw err;
    });
    return this.indexed;
  }

  /**
   * Makes every writer still waiting for a lock, and every later one, give up with
   * {@link LockAbandonedError} before its work runs; work already holding a lock finishes. For a
   * stopping service: a wait may last `waitMs` (15 s), longer than the process may take to stop.
   */
  abandonWaits(): void {
    this.waitsAbandoned = true;
    for (const abandon of this.waits) abandon();
  }

  /** How many waits are running now (for the queue ahead, or a pause between attempts); 0 when idle. */
  get waiting(): number {
    return this.waits.size;
  }

  /**
   * Runs `work` while holding the conversation's lock. The result is returned once the work is done and
   * a renewal still in flight then has answered (none is sent after); the lease is released right
   * after, in the background, and the next writer of this process waits for that release. Released on
   * failure too. Throws {@link LockTimeoutError} when the lock is not held within `waitMs` of this call,
   * and {@link LeaseLostError} instead of the work's result when a renewal sent while the work ran found
   * the lease gone, including one that answers only after the work is done.
   */
  async withLock<T>(key: string, work: () => Promise<T>): Promise<T> {
    // Fixed now, not once the writers ahead are through: the k-th writer queued behind a slow holder
    // would otherwise answer after k waits, and one behind a holder that never ends, never. On the
    // monotonic clock: a wall clock stepped forward during the wait would give up at once, and one
    // stepped back would wait as long as the step.
    const giveUpAt = performance.now() + this.options.waitMs;
    const previous = this.queues.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => mine);
    this.queues.set(key, tail);
    const done = () => {
      release();
      if (this.queues.get(key) === tail) this.queues.delete(key);
    };
    let lease: Taking;
    try {
      await this.waitFor(key, previous, giveUpAt);
      lease = await this.acquire(key, giveUpAt);
    } catch (err) {
      // Gave up before holding the lock: a holder ahead may still be working, so the entry stays until
      // the queue up to here is through, the writers behind still wait for that holder, and settled()
      // still waits for it too.
      release();
      void tail.then(done);
      throw err;
    }
    const renewal = this.keepRenewed(lease);
    let result: T;
    let renewalStopped!: Promise<void>;
    try {
      result = await work();
    } finally {
      renewalStopped = renewal.stop();
      // A failed release only delays the next writer until the lease is taken over.
      void renewalStopped
        .then(() => this.leases.deleteOne({ _id: lease.id }))
        .catch(() => undefined)
        .finally(done);
    }
    // A renewal sent while the work ran may answer after it that the lease is gone: the work's result
    // waits for that answer, or it would be reported done though another writer may have raced it.
    await renewalStopped;
    if (renewal.lost()) throw new LeaseLostError(key);
    return result;
  }

  /**
   * Extends a held lease every third of its length while its work runs: a write slowed past the lease
   * (a loaded database) must not let another replica take the lease over and write at the same time.
   * Only a holder that stops renewing (crashed, or cut off from the database) loses it, a lease after
   * its last renewal. A renewal that matches nothing means the lease is gone: renewing stops, and
   * {@link Renewal.lost} tells the work's caller.
   */
  private keepRenewed(lease: Taking): Renewal {
    const { leaseMs } = this.options;
    let stopped = false;
    let lost = false;
    let stamp = lease.expiresAt;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let renewing: Promise<unknown> = Promise.resolve();
    const schedule = () => {
      timer = setTimeout(() => {
        stamp = nextStamp(stamp, leaseMs);
        renewing = this.leases
          .updateOne({ _id: lease.id }, { $set: { expires_at: stamp } })
          .then(
            (renewed) => {
              if (renewed.matchedCount === 0) lost = true;
            },
            // A failed renewal is retried at the next one; the lease holds until a lease passes unrenewed.
            () => undefined,
          )
          .finally(() => {
            if (!stopped && !lost) schedule();
          });
      }, leaseMs / 3);
    };
    schedule();
    return {
      stop: async () => {
        stopped = true;
        clearTimeout(timer);
        await renewing;
      },
      lost: () => lost,
    };
  }

  /** Resolves once every lock taken so far has been released. */
  async settled(): Promise<void> {
    while (this.queues.size > 0) await Promise.all([...this.queues.values()]);
  }

  /**
   * Waits for `step`, or throws {@link LockAbandonedError} once waits are abandoned, or
   * {@link LockTimeoutError} at `giveUpAt` (monotonic clock) when given.
   */
  private async waitFor<T>(key: string, step: Promise<T>, giveUpAt?: number): Promise<T> {
    if (this.waitsAbandoned) throw new LockAbandonedError(key);
    let abandon!: () => void;
    const abandoned = new Promise<never>((_, reject) => {
      abandon = () => reject(new LockAbandonedError(key));
    });
    this.waits.add(abandon);
    const race = Promise.race([step, abandoned]);
    try {
      if (giveUpAt !== undefined && !(await settlesWithin(race, giveUpAt - performance.now()))) throw new LockTimeoutError(key);
      return await race;
    } catch (err) {
      if (this.waitsAbandoned) throw new LockAbandonedError(key);
      throw err;
    } finally {
      // Out of the set, nothing holds `abandoned` any more, nor the reaction the race left on it.
      this.waits.delete(abandon);
    }
  }

  /** Takes the conversation's lease by `giveUpAt` (monotonic clock); returns this taking. */
  private async acquire(key: string, giveUpAt: number): Promise<Taking> {
    await this.ensureIndex();
    const id = randomUUID();
    let attempt = 0;
    let sighting: Sighting | undefined;
    for (;;) {
      if (this.waitsAbandoned) throw new LockAbandonedError(key);
      const expiresAt = new Date(Date.now() + this.options.leaseMs);
      try {
        await this.leases.insertOne({ _id: id, conversation: key, expires_at: expiresAt });
        return { id, expiresAt };
      } catch (err) {
        if (!isDuplicateKey(err)) throw err;
      }
      // Timed before the read is sent, and a sighting after its answer: a takeover then needs the same
      // stamp in two reads a whole lease apart, however slow either answer was.
      const askedAt = performance.now();
      const holder = await this.leases.findOne({ conversation: key });
      if (holder) {
        sighting = sightingOf(sighting, holder, performance.now());
        if (askedAt - sighting.since >= this.options.leaseMs) {
          // Unrenewed for a whole lease (crashed or cut off): remove exactly that taking, and only while
          // still unrenewed (by its own `_id` and stamp, so never a lease taken or renewed since), and
          // race for a new one.
          await this.leases.deleteOne({ _id: holder._id, expires_at: holder.expires_at });
          sighting = undefined;
          continue;
        }
      }
      if (performance.now() >= giveUpAt) throw new LockTimeoutError(key);
      attempt++;
      const backoff = Math.min(this.options.pollMs * 2 ** Math.min(attempt, 5), 100);
      await this.waitFor(key, sleep(backoff / 2 + Math.random() * (backoff / 2)));
    }
  }
}
