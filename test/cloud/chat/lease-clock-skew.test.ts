/**
 * Replicas whose wall clocks disagree (skew, an NTP step) share the conversation leases on a real
 * FerretDB. A lease's `expires_at` is written by its holder's clock, so another replica must never
 * judge it by its own: a holder still renewing keeps its lease whatever the clocks say, a holder that
 * stopped renewing loses it about a lease after, and a holder whose lease was taken from it fails its
 * write instead of reporting it done.
 */
import t from 'tap';
import { performance } from 'node:perf_hooks';
import type { Collection, Document, Filter, UpdateFilter, UpdateResult } from 'mongodb';
import { ConversationLock, LEASE_COLLECTION, type LeaseDocument } from '../../../cloud/chat/conversation-lock.js';
import { conversationsOf, createConversation, getConversation, send, startChat, terminalOf } from './support/harness.js';
import { dbWith } from '../../support/db-with.js';
import { freshChatDatabase } from './support/mongo.js';

// What a waiter must see unrenewed before it takes a lease over. The first test's holder renews right
// before each of the waiter's reads, and in the others nothing competes with a live holder, so no load
// makes it too short.
const LEASE_MS = 1_500;
const MINUTE = 60_000;

/** The holder's lease, as the unmatched renewal of the lock names it: matched by its error's name. */
const LEASE_LOST = { name: 'LeaseLostError' };

/**
 * `leases` with its updates (the lock's renewals) reported: `renewalFindingNothing()` resolves at the
 * next renewal that matched no lease, that is once the holder has had the chance to learn its lease
 * is gone.
 */
function watchRenewals(leases: Collection<LeaseDocument>): {
  updateOne: (filter: Filter<LeaseDocument>, update: UpdateFilter<LeaseDocument>) => Promise<UpdateResult>;
  renewalFindingNothing: () => Promise<void>;
} {
  let waiters: Array<() => void> = [];
  return {
    updateOne: async (filter, update) => {
      const result = await leases.updateOne(filter, update);
      if (result.matchedCount === 0) {
        for (const wake of waiters) wake();
        waiters = [];
      }
      return result;
    },
    renewalFindingNothing: () => new Promise<void>((resolve) => waiters.push(resolve)),
  };
}

/**
 * A holder (another replica) that renews its lease with `renew` right before each of the waiter's reads
 * of it, so the waiter sees a new stamp every time however late either one runs on a loaded machine,
 * until the waiter has been reading for three leases of its own clock; then the holder stops (it
 * crashed) and `stopped` resolves. `findOne` stands in for the waiter's.
 */
function renewedBeforeEveryRead(
  leases: Collection<LeaseDocument>,
  renew: () => Promise<UpdateResult>,
): { findOne: (filter: Filter<LeaseDocument>) => Promise<LeaseDocument | null>; stopped: Promise<void>; renewals: () => number; renewed: () => number } {
  let renewals = 0;
  let renewed = 0;
  let firstReadAt: number | undefined;
  let renewing = true;
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  return {
    findOne: async (filter) => {
      if (renewing) {
        firstReadAt ??= performance.now();
        if (performance.now() - firstReadAt < 3 * LEASE_MS) {
          renewals++;
          renewed += (await renew()).matchedCount;
        } else {
          renewing = false;
          stop();
        }
      }
      return leases.findOne(filter);
    },
    stopped,
    renewals: () => renewals,
    renewed: () => renewed,
  };
}

t.test('a holder whose clock is a minute behind keeps its lease while it renews, and loses it once it stops', async (t) => {
  const { db } = await freshChatDatabase(t);
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);
  // Replica A's clock runs a minute behind replica B's: every expiry it writes is already past for B.
  let stamp = new Date(Date.now() - MINUTE + LEASE_MS);
  await leases.insertOne({ _id: 'replica-a', conversation: 'c1', expires_at: stamp });
  const holder = renewedBeforeEveryRead(leases, () => {
    // Later than the last, as the lock's own stamps are, so two renewals in one millisecond differ.
    stamp = new Date(Math.max(Date.now() - MINUTE + LEASE_MS, stamp.getTime() + 1));
    return leases.updateOne({ _id: 'replica-a' }, { $set: { expires_at: stamp } });
  });
  const waiter = new ConversationLock(dbWith(db, { [LEASE_COLLECTION]: { findOne: holder.findOne } }).collection<LeaseDocument>(LEASE_COLLECTION), {
    leaseMs: LEASE_MS,
    waitMs: 30_000,
    pollMs: 5,
  });
  await waiter.start();
  let ranUnder: string | undefined;
  const waited = waiter.withLock('c1', async () => {
    ranUnder = (await leases.findOne({ conversation: 'c1' }))?._id;
  });
  // Replica A works on, renewing, while B polls for three leases of B's own clock (or until B, wrongly,
  // takes the lease over and writes).
  await Promise.race([holder.stopped, waited]);
  t.ok(holder.renewals() > 0, 'replica A renewed while replica B polled');
  t.equal(holder.renewed(), holder.renewals(), "every renewal found replica A's lease: replica B never took it over");
  t.equal(ranUnder, undefined, 'replica B did not write while replica A held the lease');
  // Replica A stops renewing (it crashed): B takes the lease over.
  await waited;
  t.not(ranUnder, undefined, 'replica B wrote once replica A stopped renewing');
  t.not(ranUnder, 'replica-a', 'under a lease of its own');
  await waiter.settled();
  t.equal(await leases.countDocuments({}), 0, 'every lease was released');
});

t.test('a crashed holder whose clock ran an hour ahead is still taken over, about a lease after it stopped', async (t) => {
  const { db } = await freshChatDatabase(t);
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);
  await leases.insertOne({ _id: 'clock-ahead', conversation: 'c2', expires_at: new Date(Date.now() + 60 * MINUTE) });
  const lock = new ConversationLock(leases, { leaseMs: LEASE_MS, waitMs: 15_000, pollMs: 5 });
  const lease = await lock.withLock('c2', async () => (await leases.findOne({ conversation: 'c2' }))?._id);
  t.not(lease, undefined, 'the work ran under a lease');
  t.not(lease, 'clock-ahead', "under a lease of its own, well before the crashed holder's own clock says it expires");
  await lock.settled();
  t.equal(await leases.countDocuments({}), 0);
});

t.test('a holder whose lease was removed under it fails its work instead of returning its result', async (t) => {
  const { db } = await freshChatDatabase(t);
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);
  const watched = watchRenewals(leases);
  const lock = new ConversationLock(dbWith(db, { [LEASE_COLLECTION]: { updateOne: watched.updateOne } }).collection<LeaseDocument>(LEASE_COLLECTION), {
    leaseMs: LEASE_MS,
    waitMs: 15_000,
    pollMs: 5,
  });
  const result = lock.withLock('c3', async () => {
    // Another replica took the lease over (or removed it): this holder's next renewal finds nothing.
    const removed = await leases.deleteOne({ conversation: 'c3' });
    t.equal(removed.deletedCount, 1, "the holder's lease was there to remove");
    await watched.renewalFindingNothing();
    return 'written';
  });
  await t.rejects(result, { ...LEASE_LOST, message: /lost its lease on conversation c3/ }, 'the work is not reported done');
  await lock.settled();
  t.equal(await leases.countDocuments({}), 0, 'nothing left behind');
});

t.test('an answer whose lease was taken over while it was being stored ends with store_failed, not done', async (t) => {
  const { db } = await freshChatDatabase(t);
  const conversations = conversationsOf(db);
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);
  const watched = watchRenewals(leases);
  let appends = 0;
  const chat = await startChat(t, {
    db,
    lock: { leaseMs: LEASE_MS },
    storeDb: (real) =>
      dbWith(real, {
        [LEASE_COLLECTION]: { updateOne: watched.updateOne },
        [conversations.collectionName]: {
          // The append is slow (a loaded database); meanwhile another replica takes the lease over.
          updateOne: async (filter: Filter<Document>, update: UpdateFilter<Document>) => {
            if (appends++ === 0) {
              await leases.deleteMany({});
              await watched.renewalFindingNothing();
            }
            return conversations.updateOne(filter, update);
          },
        },
      }),
  });
  const conversation = await createConversation(chat.url, 'ana', 'Boiler');
  chat.agent.expect({ tokens: ['stored ', 'alongside another'] });
  const result = await send(chat.url, 'ana', conversation.id, 'q');
  t.match(terminalOf(result), { type: 'error', error: 'store_failed', message: /another writer took the conversation over/ }, 'the send is not answered done');
  t.equal(appends, 1, 'the append ran once');
  t.equal((await getConversation(chat.url, 'ana', conversation.id)).messages?.length, 2, 'what it wrote is there to be seen on reload');
});
