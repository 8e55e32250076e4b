/**
 * A lock wait leaves nothing behind once it is over: every write waits (for the writers ahead of it,
 * and between attempts while another replica holds the lease), and a service lives for weeks. Each
 * wait used to race a promise pending for the life of the process, which kept a reaction of every
 * wait ever made (312 MB after a million). Abandoning the waits at stop must still release a writer
 * blocked then. On a real FerretDB.
 */
import t from 'tap';
import { queryObjects } from 'node:v8';
import { ConversationLock, LEASE_COLLECTION, LockAbandonedError, type LeaseDocument } from '../../../cloud/chat/conversation-lock.js';
import { freshChatDatabase } from './support/mongo.js';

const CYCLES = 200;

/**
 * Promises still reachable, counted after a full garbage collection (what queryObjects does first).
 * queryObjects came with Node 20.13 and 22, hence package.json's engines.
 */
const livePromises = () => queryObjects(Promise, { format: 'count' });

/** Waits until `lock` has a wait running: its writer found the lease taken and pauses between attempts. */
async function untilWaiting(lock: ConversationLock): Promise<void> {
  while (lock.waiting === 0) await new Promise((resolve) => setImmediate(resolve));
}

t.test('lock cycles, queued and contended, leave no wait registered and no promise behind', async (t) => {
  const { db } = await freshChatDatabase(t);
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);
  const lock = new ConversationLock(leases, { leaseMs: 10_000, waitMs: 20_000, pollMs: 5 });
  await lock.start();
  const cycle = async (i: number) => {
    // Two writers of one conversation: the second waits for the first in this process.
    await Promise.all([lock.withLock(`c${i % 4}`, async () => i), lock.withLock(`c${i % 4}`, async () => i)]);
  };
  // Warm up: the driver's pool and whatever it keeps for good are in place before counting.
  for (let i = 0; i < 20; i++) await cycle(i);
  await lock.settled();
  const before = livePromises();

  for (let i = 0; i < CYCLES; i++) await cycle(i);
  // Another replica holds a lease: the writer polls (a wait per pause) until it is released.
  await leases.insertOne({ _id: 'another-replica', conversation: 'contended', expires_at: new Date(Date.now() + 60_000) });
  const contended = lock.withLock('contended', async () => 'ran');
  await untilWaiting(lock);
  await leases.deleteOne({ _id: 'another-replica' });
  t.equal(await contended, 'ran', 'the writer took the lease once the other replica released it');
  await lock.settled();

  t.equal(lock.waiting, 0, 'no wait is registered once every lock is released');
  const grown = livePromises() - before;
  // Each of the 400 writes waited at least once; one promise kept per wait would be 400 or more.
  t.ok(grown < CYCLES / 2, `promises kept after ${CYCLES * 2} writes: ${grown}`);
});

t.test('a writer pausing for another replica lease when waits are abandoned gives up with LockAbandonedError', async (t) => {
  const { db } = await freshChatDatabase(t);
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);
  const lock = new ConversationLock(leases, { leaseMs: 10_000, waitMs: 20_000, pollMs: 5 });
  await leases.insertOne({ _id: 'another-replica', conversation: 'c1', expires_at: new Date(Date.now() + 60_000) });
  let ran = false;
  const waiter = lock.withLock('c1', async () => (ran = true));
  await untilWaiting(lock);

  lock.abandonWaits();
  await t.rejects(waiter, new LockAbandonedError('c1'), 'released with the stopping error');
  t.equal(ran, false, 'its work never ran');
  t.equal(lock.waiting, 0, 'and its wait is gone');
  await lock.settled();
  t.same(await leases.find({}).toArray().then((all) => all.map((lease) => lease._id)), ['another-replica'], 'the other replica lease is untouched');
});
