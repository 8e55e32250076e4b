import t from 'tap';
import type { Filter, UpdateFilter, UpdateResult } from 'mongodb';
import { ConversationLock, LEASE_COLLECTION, type LeaseDocument } from '../../../cloud/chat/conversation-lock.js';
import { dbWith } from './support/db-with.js';
import { freshChatDatabase } from './support/mongo.js';

// The holder's own renewals (every third of the lease, 2 s) keep its lease here, against a waiter that
// polls all along: only a stall of 4 s (the test's process or FerretDB, with CI's test files sharing two
// cores) could let the waiter take over.
const LEASE_MS = 6_000;
// Nothing competes with a crashed holder, so its lease can be short.
const CRASHED_LEASE_MS = 1_500;
// Renewals the holder makes while the waiter waits: 8 s, more than a lease.
const RENEWALS_WAITED_OUT = 4;

t.test('a holder whose work outlasts the lease keeps it: another replica waits instead of taking it over', async (t) => {
  const { db } = await freshChatDatabase(t);
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);
  let renewals = 0;
  let renewed = 0;
  let renewedEnough!: () => void;
  const waitedOut = new Promise<void>((resolve) => (renewedEnough = resolve));
  const holderLeases = dbWith(db, {
    [LEASE_COLLECTION]: {
      updateOne: async (filter: Filter<LeaseDocument>, update: UpdateFilter<LeaseDocument>): Promise<UpdateResult> => {
        renewals++;
        const result = await leases.updateOne(filter, update);
        renewed += result.matchedCount;
        if (renewed === RENEWALS_WAITED_OUT) renewedEnough();
        return result;
      },
    },
  }).collection<LeaseDocument>(LEASE_COLLECTION);
  // Two replicas: two locks on one collection.
  const first = new ConversationLock(holderLeases, { leaseMs: LEASE_MS, waitMs: 30_000, pollMs: 5 });
  const second = new ConversationLock(leases, { leaseMs: LEASE_MS, waitMs: 30_000, pollMs: 5 });
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
  // The first holder works on while it renews its lease, more than a lease's worth, the second polling
  // (or until the second, wrongly, takes the lease over).
  await Promise.race([waitedOut, next]);
  t.same(order, ['first in'], 'the second replica did not take over the lease of a holder still working');
  release();
  await Promise.all([slow, next]);
  t.same(order, ['first in', 'first out', 'second in']);
  t.equal(renewed, renewals, "every renewal found the holder's lease");
  await first.settled();
  await second.settled();
  t.equal(await leases.countDocuments({}), 0, 'every lease was released');
});

t.test('a lease whose holder stopped renewing it (a crashed replica) is still taken over once it expires', async (t) => {
  const { db } = await freshChatDatabase(t);
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);
  await leases.insertOne({ _id: 'crashed', conversation: 'c2', expires_at: new Date(Date.now() + CRASHED_LEASE_MS) });
  const lock = new ConversationLock(leases, { leaseMs: CRASHED_LEASE_MS, waitMs: 20_000, pollMs: 5 });
  const lease = await lock.withLock('c2', async () => (await leases.findOne({ conversation: 'c2' }))?._id);
  t.not(lease, undefined, 'the work ran under a lease');
  t.not(lease, 'crashed', 'the work ran under a lease of its own');
  await lock.settled();
  t.equal(await leases.countDocuments({}), 0);
});
