import t from 'tap';
import { performance } from 'node:perf_hooks';
import type { Collection, Db, Filter, UpdateFilter, UpdateResult } from 'mongodb';
import { ConversationLock, LEASE_COLLECTION, type LeaseDocument } from '../../../cloud/chat/conversation-lock.js';
import { dbWith } from '../../support/db-with.js';
import { freshChatDatabase } from './support/mongo.js';

// What a waiter must see unrenewed before it takes a lease over. In the first test the waiter reads the
// lease only once the holder's own next renewal has landed, and in the second nothing competes with
// the crashed holder, so no load makes it too short.
const LEASE_MS = 1_500;

/** The stamp a renewal writes: the lock renews with `$set: { expires_at }`. */
function stampOf(update: UpdateFilter<LeaseDocument>): number {
  const stamp = (update as { $set?: { expires_at?: unknown } }).$set?.expires_at;
  if (!(stamp instanceof Date)) throw new Error(`not a renewal: ${JSON.stringify(update)}`);
  return stamp.getTime();
}

/**
 * A holder and a waiter on the leases of `db`, paced by the holder's renewals. `holder` is what the
 * holder's lock sees: its renewals (the lock's own, on its own timer) are counted and its release
 * noted. `waiter` is what the waiter's lock sees: each of its reads of the lease is sent only once a
 * renewal newer than the stamp it last read has landed (or the holder released its lease), so it sees
 * a new stamp every time however late either one runs on a loaded machine; only a renewal that failed
 * to land or to change the stamp could let it take the lease over. `waitedOut` resolves once the
 * waiter has judged a read sent more than two leases after its first, by its own clock, and did not
 * take over.
 */
function pacedByRenewals(db: Db): {
  holder: Collection<LeaseDocument>;
  waiter: Collection<LeaseDocument>;
  waitedOut: Promise<void>;
  renewals: () => number;
  renewed: () => number;
} {
  let renewals = 0;
  let renewed = 0;
  let lastRenewal: number | undefined;
  let released = false;
  let wakeWaiter: (() => void) | undefined;
  const wake = () => {
    wakeWaiter?.();
    wakeWaiter = undefined;
  };
  let lastRead: number | undefined;
  let firstReadAt: number | undefined;
  let previousReadAt: number | undefined;
  let outlasted!: () => void;
  const waitedOut = new Promise<void>((resolve) => (outlasted = resolve));
  const renewedSinceLastRead = () => released || lastRead === undefined || (lastRenewal !== undefined && lastRenewal > lastRead);
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);
  const holder = dbWith(db, {
    [LEASE_COLLECTION]: {
      updateOne: async (filter: Filter<LeaseDocument>, update: UpdateFilter<LeaseDocument>): Promise<UpdateResult> => {
        renewals++;
        const result = await leases.updateOne(filter, update);
        if (result.matchedCount === 1) {
          renewed++;
          lastRenewal = stampOf(update);
        }
        wake();
        return result;
      },
      deleteOne: async (filter: Filter<LeaseDocument>) => {
        const result = await leases.deleteOne(filter);
        released = true;
        wake();
        return result;
      },
    },
  }).collection<LeaseDocument>(LEASE_COLLECTION);
  const waiter = dbWith(db, {
    [LEASE_COLLECTION]: {
      findOne: async (filter: Filter<LeaseDocument>) => {
        const now = performance.now();
        firstReadAt ??= now;
        // The waiter judged the read before this one, sent two leases after its first, without taking over.
        if (previousReadAt !== undefined && previousReadAt - firstReadAt > 2 * LEASE_MS) outlasted();
        previousReadAt = now;
        while (!renewedSinceLastRead()) await new Promise<void>((resolve) => (wakeWaiter = resolve));
        const lease = await leases.findOne(filter);
        if (lease) lastRead = lease.expires_at.getTime();
        return lease;
      },
    },
  }).collection<LeaseDocument>(LEASE_COLLECTION);
  return { holder, waiter, waitedOut, renewals: () => renewals, renewed: () => renewed };
}

t.test('a holder whose work outlasts the lease keeps it: another replica waits instead of taking it over', async (t) => {
  const { db } = await freshChatDatabase(t);
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);
  const paced = pacedByRenewals(db);
  // Two replicas: two locks on one collection.
  const first = new ConversationLock(paced.holder, { leaseMs: LEASE_MS, waitMs: 30_000, pollMs: 5 });
  const second = new ConversationLock(paced.waiter, { leaseMs: LEASE_MS, waitMs: 30_000, pollMs: 5 });
  const order: string[] = [];
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let entered!: () => void;
  const firstEntered = new Promise<void>((resolve) => (entered = resolve));
  const slow = first.withLock('c1', async () => {
    order.push('first in');
    entered();
    await released;
    order.push('first out');
  });
  await firstEntered;
  const next = second.withLock('c1', async () => {
    order.push('second in');
  });
  // The first holder works on while it renews its lease, the second polling for more than two leases
  // of its own clock (or until the second, wrongly, takes the lease over).
  await Promise.race([paced.waitedOut, next]);
  t.same(order, ['first in'], 'the second replica did not take over the lease of a holder still working');
  t.ok(paced.renewed() > 0, 'the holder renewed its lease while the second replica polled');
  release();
  await Promise.all([slow, next]);
  t.same(order, ['first in', 'first out', 'second in']);
  t.equal(paced.renewed(), paced.renewals(), "every renewal found the holder's lease");
  await first.settled();
  await second.settled();
  t.equal(await leases.countDocuments({}), 0, 'every lease was released');
});

t.test('a lease whose holder stopped renewing it (a crashed replica) is still taken over once it expires', async (t) => {
  const { db } = await freshChatDatabase(t);
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);
  await leases.insertOne({ _id: 'crashed', conversation: 'c2', expires_at: new Date(Date.now() + LEASE_MS) });
  const lock = new ConversationLock(leases, { leaseMs: LEASE_MS, waitMs: 20_000, pollMs: 5 });
  const lease = await lock.withLock('c2', async () => (await leases.findOne({ conversation: 'c2' }))?._id);
  t.not(lease, undefined, 'the work ran under a lease');
  t.not(lease, 'crashed', 'the work ran under a lease of its own');
  await lock.settled();
  t.equal(await leases.countDocuments({}), 0);
});
