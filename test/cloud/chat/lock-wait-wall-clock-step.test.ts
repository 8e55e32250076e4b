/**
 * A writer waits for a conversation's lock at most `waitMs` from its call, on the monotonic clock. The
 * deadline was on the wall clock: a step forward (NTP) while it waited for another replica's lease made
 * it give up at once (409 `conversation is busy`, or `store_failed` for an answer), and a step back made
 * it wait as long as the step. The wall clock is stepped in-process (Date.now); the leases are on a real
 * FerretDB, and the other replica is a second lock on the same collection.
 */
import t from 'tap';
import type { Collection, Filter } from 'mongodb';
import { ConversationLock, LEASE_COLLECTION, LockTimeoutError, type LeaseDocument } from '../../../cloud/chat/conversation-lock.js';
import { steppableWallClock } from '../../support/wall-clock.js';
import { dbWith } from '../../support/db-with.js';
import { freshChatDatabase } from './support/mongo.js';

const HOUR_MS = 3_600_000;
// Far longer than the test takes: no lease is taken over, and no renewal is needed.
const LEASE_MS = 60_000;

/**
 * `leases` as the waiting replica reads them: `reads(n)` resolves once the waiter has read the holder's
 * lease `n` times in all.
 */
function countedReads(leases: Collection<LeaseDocument>) {
  let count = 0;
  let waiters: Array<{ n: number; wake: () => void }> = [];
  return {
    findOne: async (filter: Filter<LeaseDocument>) => {
      const found = await leases.findOne(filter);
      count++;
      for (const waiter of waiters.filter((w) => w.n <= count)) waiter.wake();
      waiters = waiters.filter((w) => w.n > count);
      return found;
    },
    count: () => count,
    reads: (n: number) => new Promise<void>((wake) => (n <= count ? wake() : waiters.push({ n, wake }))),
  };
}

/** Another replica holding the lock on `key` until `finish()`. */
async function holding(lock: ConversationLock, key: string): Promise<{ finish: () => void; done: Promise<void> }> {
  let finish!: () => void;
  const mayFinish = new Promise<void>((resolve) => (finish = resolve));
  let entered!: () => void;
  const holderEntered = new Promise<void>((resolve) => (entered = resolve));
  const done = lock.withLock(key, async () => {
    entered();
    await mayFinish;
  });
  await holderEntered;
  return { finish, done };
}

/** What `promise` came to, without waiting for it: `pending` while it has not settled. */
function outcomeOf(promise: Promise<unknown>): () => 'pending' | 'resolved' | { rejected: unknown } {
  let outcome: 'pending' | 'resolved' | { rejected: unknown } = 'pending';
  promise.then(
    () => (outcome = 'resolved'),
    (err: unknown) => (outcome = { rejected: err }),
  );
  return () => outcome;
}

t.test("a wall clock stepped an hour forward while a writer waits for another replica's lease does not make it give up", async (t) => {
  const { db } = await freshChatDatabase(t);
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);
  const wallClock = steppableWallClock(t);
  const holder = await holding(new ConversationLock(leases, { leaseMs: LEASE_MS, waitMs: 5_000, pollMs: 5 }), 'c1');
  t.teardown(async () => {
    holder.finish();
    await holder.done;
  });
  const watched = countedReads(leases);
  const waiter = new ConversationLock(dbWith(db, { [LEASE_COLLECTION]: { findOne: watched.findOne } }).collection<LeaseDocument>(LEASE_COLLECTION), {
    leaseMs: LEASE_MS,
    waitMs: 60_000,
    pollMs: 5,
  });
  t.teardown(() => waiter.settled());
  let ran = false;
  const written = waiter.withLock('c1', async () => {
    ran = true;
  });
  const outcome = outcomeOf(written);
  await watched.reads(1);
  wallClock.step(HOUR_MS);
  // Each read is followed by the check of the deadline, and then (while waiting) by the next read.
  const steppedAt = watched.count();
  await Promise.race([watched.reads(steppedAt + 3), written.catch(() => undefined)]);
  t.equal(outcome(), 'pending', 'still waiting for the lease after the step');
  t.notOk(ran, 'without writing while the other replica holds the lease');

  holder.finish();
  await holder.done;
  await written;
  t.ok(ran, 'it wrote once the other replica released the lease');
  await waiter.settled();
  t.equal(await leases.countDocuments({}), 0, 'every lease was released');
});

t.test("a wall clock stepped an hour back while a writer waits for another replica's lease does not make it wait an hour", async (t) => {
  const { db } = await freshChatDatabase(t);
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);
  const wallClock = steppableWallClock(t);
  const holder = await holding(new ConversationLock(leases, { leaseMs: LEASE_MS, waitMs: 5_000, pollMs: 5 }), 'c2');
  t.teardown(async () => {
    holder.finish();
    await holder.done;
  });
  const watched = countedReads(leases);
  const waitMs = 1_000;
  const waiter = new ConversationLock(dbWith(db, { [LEASE_COLLECTION]: { findOne: watched.findOne } }).collection<LeaseDocument>(LEASE_COLLECTION), {
    leaseMs: LEASE_MS,
    waitMs,
    pollMs: 5,
  });
  const written = waiter.withLock('c2', async () => {
    t.fail('wrote while the other replica held the lease');
  });
  const outcome = outcomeOf(written);
  await watched.reads(1);
  wallClock.step(-HOUR_MS);
  // Only a guard, far beyond the wait: a writer waiting out the hour fails the test instead of hanging it.
  let guard: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([written.catch(() => undefined), new Promise<void>((resolve) => (guard = setTimeout(resolve, 20 * waitMs)))]);
  clearTimeout(guard);
  const found = outcome();
  t.ok(typeof found === 'object' && found.rejected instanceof LockTimeoutError, 'it gave up with LockTimeoutError within its own wait', { found });
  t.equal(await leases.countDocuments({ conversation: 'c2' }), 1, "the other replica's lease is still held");
});
