import t from 'tap';
import { MongoClient } from 'mongodb';
import { ConversationLock, LEASE_COLLECTION, type LeaseDocument } from '../../../cloud/chat/conversation-lock.js';
import { freshChatDatabase } from './support/mongo.js';

/**
 * Replicas racing to take over one expired lease (its holder crashed): exactly one may run its work at a
 * time. FerretDB applies a delete as a read and then a delete by `_id`, so removing the stale lease must
 * never be able to remove the lease another replica took meanwhile.
 */
const REPLICAS = 4;
const TRIALS = 150;

t.test('replicas taking over an expired lease at once never hold it together', async (t) => {
  const { db, uri } = await freshChatDatabase(t);
  // One client per replica, as separate processes would have: their operations really interleave.
  const clients = await Promise.all(Array.from({ length: REPLICAS }, () => new MongoClient(uri, { serverSelectionTimeoutMS: 5_000 }).connect()));
  t.teardown(() => Promise.all(clients.map((c) => c.close())));
  const locks = clients.map((c) => new ConversationLock(c.db().collection<LeaseDocument>(LEASE_COLLECTION), { leaseMs: 10_000, waitMs: 30_000, pollMs: 1 }));
  await Promise.all(locks.map((lock) => lock.start()));
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);

  let inside = 0;
  let overlaps = 0;
  let runs = 0;
  for (let trial = 0; trial < TRIALS; trial++) {
    const key = `conversation-${trial}`;
    // The lease of a replica that crashed holding it.
    await leases.insertOne({ _id: `crashed-${trial}`, conversation: key, expires_at: new Date(Date.now() - 1_000) });
    await Promise.all(
      locks.map((lock) =>
        lock.withLock(key, async () => {
          inside++;
          if (inside > 1) overlaps++;
          runs++;
          // Hold the lease across a few round trips, as an append does.
          await db.collection('probe').findOne({});
          await db.collection('probe').findOne({});
          inside--;
        }),
      ),
    );
  }
  await Promise.all(locks.map((lock) => lock.settled()));
  t.equal(runs, REPLICAS * TRIALS, 'every replica ran its work once per trial');
  t.equal(overlaps, 0, 'no two replicas ever held one lease at the same time');
  t.equal(await leases.countDocuments({}), 0, 'every lease was released');
});
