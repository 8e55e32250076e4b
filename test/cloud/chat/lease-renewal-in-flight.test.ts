/**
 * A renewal sent while the holder's work ran, whose answer (the lease is gone) comes only after the
 * work is done, still fails the work: the lock used to look at what the renewals had found so far the
 * moment the work returned, and reported the write done. On a real FerretDB; the renewal is really
 * sent, and only its answer is held back, as a loaded database would.
 */
import t from 'tap';
import type { Filter, UpdateFilter, UpdateResult } from 'mongodb';
import { ConversationLock, LEASE_COLLECTION, type LeaseDocument } from '../../../cloud/chat/conversation-lock.js';
import { dbWith } from '../../support/db-with.js';
import { freshChatDatabase } from './support/mongo.js';

// Renewed every 200 ms; no other replica waits here, so no load makes it too short.
const LEASE_MS = 600;

/** A promise with its resolver, for the steps the test orders. */
function step(): { reached: Promise<void>; reach: () => void } {
  let reach!: () => void;
  const reached = new Promise<void>((resolve) => (reach = resolve));
  return { reached, reach };
}

t.test('a renewal still in flight when the work returns, answering that the lease is gone, fails the work', async (t) => {
  const { db } = await freshChatDatabase(t);
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);
  const takenOver = step();
  const renewalSent = step();
  const workReturned = step();
  let renewals = 0;
  const holderLeases = dbWith(db, {
    [LEASE_COLLECTION]: {
      updateOne: async (filter: Filter<LeaseDocument>, update: UpdateFilter<LeaseDocument>): Promise<UpdateResult> => {
        renewals++;
        await takenOver.reached;
        const answer = leases.updateOne(filter, update);
        renewalSent.reach();
        const renewed = await answer;
        // Held until the work has returned and the lock has run on past it (a macrotask later).
        await workReturned.reached;
        await new Promise((resolve) => setImmediate(resolve));
        return renewed;
      },
    },
  }).collection<LeaseDocument>(LEASE_COLLECTION);
  const lock = new ConversationLock(holderLeases, { leaseMs: LEASE_MS, waitMs: 15_000, pollMs: 5 });

  const result = lock.withLock('c1', async () => {
    // Another replica took the lease over: the renewal about to be sent finds nothing.
    const removed = await leases.deleteOne({ conversation: 'c1' });
    t.equal(removed.deletedCount, 1, "the holder's lease was there to remove");
    takenOver.reach();
    await renewalSent.reached;
    workReturned.reach();
    return 'written';
  });

  await t.rejects(result, { name: 'LeaseLostError', message: /lost its lease on conversation c1/ }, 'the work is not reported done');
  t.equal(renewals, 1, 'one renewal was sent, while the work ran, and none after it');
  await lock.settled();
  t.equal(await leases.countDocuments({}), 0, 'nothing left behind');
});
