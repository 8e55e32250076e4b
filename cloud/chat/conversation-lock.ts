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
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Collection } from 'mongodb';
import { settlesWithin } from '../../shared/lifecycle.js';

export interface LeaseDocument {
  /** This taking of the lease: a fresh UUID each time. */
  _id: string;
  /** The conversation locked; unique across the collection ({@link LEASE_INDEX}). */
  conversation: string;
  expires_at: Date;
}

/** The collection of leases. A new name: the leases of earlier releases were keyed otherwise. */
export const LEASE_COLLECTION = 'conversation_leases';

/** One lease per conversation, refused atomically by the database. */
export const LEASE_INDEX = { key: { conversation: 1 } as const, name: 'conversation_unique' };

export interface ConversationLockOptions {
  /**
   * How long a lease holds unless renewed, before another writer may take it over (a crashed holder).
   * The holder renews it every third of this while its work runs.
   */
  leaseMs: number;
  /**
   * How long a writer waits for the lock before giving up with {@link LockTimeoutError}, counted from
   * the call: the writers ahead of it in this process and then the lease share it.
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

const DUPLICATE_KEY = 11000;

/** True for the error of an insert refused by a unique index (E11000). */
export function isDuplicateKey(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === DUPLICATE_KEY;
}

export class ConversationLock {
  private readonly leases: Collection<LeaseDocument>;
  private readonly options: ConversationLockOptions;
  private readonly queues = new Map<string, Promise<void>>();
  /** Settles (never resolves) once waits are abandoned; every waiter races its wait against it. */
  private readonly abandoned: Promise<never>;
  private abandon!: () => void;
  private waitsAbandoned = false;
  private indexed: Promise<unknown> | undefined;

  constructor(leases: Collection<LeaseDocument>, options: Partial<ConversationLockOptions> = {}) {
    this.leases = leases;
    this.options = { ...DEFAULT_LOCK_OPTIONS, ...options };
    this.abandoned = new Promise<never>((_, reject) => {
      this.abandon = () => reject(new Error('lock waits abandoned'));
    });
    this.abandoned.catch(() => undefined);
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
    this.abandon();
  }

  /**
   * Runs `work` while holding the conversation's lock. The result is returned as soon as the work is
   * done; the lease is released right after, in the background, and the next writer of this process
   * waits for that release. Released on failure too. Throws {@link LockTimeoutError} when the lock is
   * not held within `waitMs` of this call.
   */
  async withLock<T>(key: string, work: () => Promise<T>): Promise<T> {
    // Fixed now, not once the writers ahead are through: the k-th writer queued behind a slow holder
    // would otherwise answer after k waits, and one behind a holder that never ends, never.
    const giveUpAt = Date.now() + this.options.waitMs;
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
    let lease: string;
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
    const stopRenewing = this.keepRenewed(lease);
    try {
      return await work();
    } finally {
      // A failed release only delays the next writer until the lease expires.
      void stopRenewing()
        .then(() => this.leases.deleteOne({ _id: lease }))
        .catch(() => undefined)
        .finally(done);
    }
  }

  /**
   * Extends a held lease every third of its length while its work runs: a write slowed past the lease
   * (a loaded database) must not let another replica take the lease over and write at the same time.
   * Only a holder that stops renewing (crashed, or cut off from the database) loses it at expiry.
   * Returns a stop that resolves once no renewal is in flight, so none lands after the release.
   */
  private keepRenewed(lease: string): () => Promise<void> {
    const { leaseMs } = this.options;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let renewing: Promise<unknown> = Promise.resolve();
    const schedule = () => {
      timer = setTimeout(() => {
        renewing = this.leases
          .updateOne({ _id: lease }, { $set: { expires_at: new Date(Date.now() + leaseMs) } })
          // A failed renewal is retried at the next one; the lease still holds until it expires.
          .catch(() => undefined)
          .finally(() => {
            if (!stopped) schedule();
          });
      }, leaseMs / 3);
    };
    schedule();
    return async () => {
      stopped = true;
      clearTimeout(timer);
      await renewing;
    };
  }

  /** Resolves once every lock taken so far has been released. */
  async settled(): Promise<void> {
    while (this.queues.size > 0) await Promise.all([...this.queues.values()]);
  }

  /**
   * Waits for `step`, or throws {@link LockAbandonedError} once waits are abandoned, or
   * {@link LockTimeoutError} at `giveUpAt` when given.
   */
  private async waitFor<T>(key: string, step: Promise<T>, giveUpAt?: number): Promise<T> {
    if (this.waitsAbandoned) throw new LockAbandonedError(key);
    const race = Promise.race([step, this.abandoned]);
    try {
      if (giveUpAt !== undefined && !(await settlesWithin(race, giveUpAt - Date.now()))) throw new LockTimeoutError(key);
      return await race;
    } catch (err) {
      if (this.waitsAbandoned) throw new LockAbandonedError(key);
      throw err;
    }
  }

  /** Takes the conversation's lease by `giveUpAt`; returns the `_id` of this taking. */
  private async acquire(key: string, giveUpAt: number): Promise<string> {
    await this.ensureIndex();
    const lease = randomUUID();
    let attempt = 0;
    for (;;) {
      if (this.waitsAbandoned) throw new LockAbandonedError(key);
      try {
        await this.leases.insertOne({ _id: lease, conversation: key, expires_at: new Date(Date.now() + this.options.leaseMs) });
        return lease;
      } catch (err) {
        if (!isDuplicateKey(err)) throw err;
      }
      const holder = await this.leases.findOne({ conversation: key });
      if (holder && holder.expires_at.getTime() <= Date.now()) {
        // The holder outlived its lease (crashed or hung): remove exactly that taking (by its own `_id`,
        // so never a lease taken since) and race for a new one.
        await this.leases.deleteOne({ _id: holder._id });
        continue;
      }
      if (Date.now() >= giveUpAt) throw new LockTimeoutError(key);
      attempt++;
      const backoff = Math.min(this.options.pollMs * 2 ** Math.min(attempt, 5), 100);
      await this.waitFor(key, sleep(backoff / 2 + Math.random() * (backoff / 2)));
    }
  }
}
