import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConversationLock, LEASE_COLLECTION, type LeaseDocument } from '../../../cloud/chat/conversation-lock.js';
import { freshChatDatabase } from './support/mongo.js';

// Long enough that a renewal (every third of it) lands in time on a loaded machine.
const LEASE_MS = 1_500;

t.test('a holder whose work outlasts the lease keeps it: another replica waits instead of taking it over', async (t) => {
  const { db } = await freshChatDatabase(t);
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);
  // Two replicas: two locks on one collection.
  const first = new ConversationLock(leases, { leaseMs: LEASE_MS, waitMs: 20_000, pollMs: 5 });
  const second = new ConversationLock(leases, { leaseMs: LEASE_MS, waitMs: 20_000, pollMs: 5 });
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
  const heldSince = Date.now();
  const next = second.withLock('c1', async () => {
    order.push('second in');
  });
  // The lease itself is the state under test, and it is time-bound: let several leases' worth pass
  // while the first holder is still working.
  while (Date.now() - heldSince < 3 * LEASE_MS) await sleep(LEASE_MS / 3);
  t.same(order, ['first in'], 'the second replica did not take over the lease of a holder still working');
  release();
  await Promise.all([slow, next]);
  t.same(order, ['first in', 'first out', 'second in']);
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
