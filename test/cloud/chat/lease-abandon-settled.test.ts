/**
 * A stopping chat service abandons the writers still waiting for a conversation's lock, then waits for
 * the locks taken to be released before it closes the database. A writer that gives up must not take the
 * holder ahead of it out of that wait: on a real FerretDB.
 */
import t from 'tap';
import { ConversationLock, LEASE_COLLECTION, LockAbandonedError, type LeaseDocument } from '../../../cloud/chat/conversation-lock.js';
import { freshChatDatabase } from './support/mongo.js';

t.test('settled() still waits for a holder after the writer queued behind it gave up', async (t) => {
  const { db } = await freshChatDatabase(t);
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);
  const lock = new ConversationLock(leases, { leaseMs: 10_000, waitMs: 20_000, pollMs: 5 });
  let finishHolder!: () => void;
  const holderMayFinish = new Promise<void>((resolve) => (finishHolder = resolve));
  let entered!: () => void;
  const holderEntered = new Promise<void>((resolve) => (entered = resolve));
  const holder = lock.withLock('c1', async () => {
    entered();
    await holderMayFinish;
  });
  await holderEntered;
  const waiter = lock.withLock('c1', async () => 'ran');
  lock.abandonWaits();
  await t.rejects(waiter, LockAbandonedError, 'the writer waiting behind the holder gives up');

  let settled = false;
  const allSettled = lock.settled().then(() => (settled = true));
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
  t.equal(settled, false, 'the holder is still working: not settled');
  t.equal(await leases.countDocuments({}), 1, 'its lease is held');

  finishHolder();
  await holder;
  await allSettled;
  t.equal(await leases.countDocuments({}), 0, 'settled once the holder released its lease');
});
