import t from 'tap';
import { MongoClient } from 'mongodb';
import { ConversationLock, LEASE_COLLECTION, type LeaseDocument } from '../../../cloud/chat/conversation-lock.js';
import { freshChatDatabase } from './support/mongo.js';

/**
 * Replicas racing to take over one expired lease (its holder crashed): exactly one may run its work at a
 * time. FerretDB applies a delete as a read and then a delete by `_id`, so removing the stale lease must
 * never be able to remove the lease another replica took meanwhile.
 *
 * A waiter takes a lease over only once it has seen it unrenewed for a whole lease, so the trials run in
 * batches of conversations at once, each batch waiting out one lease; the waiters poll every 50 to 100 ms
 * meanwhile, which keeps their load on the shared FerretDB moderate.
 *
 * The lease is long so that a load spike cannot fake an overlap: the winner renews every 2 s, and only a
 * winner whose renewals all stalled for 4 s (its process or the database, with CI's test files sharing
 * two cores) could be taken over while it still works, which is the lock's documented limit and not the
 * race under test. Three batches keep the run near 20 s, and are plenty: with the takeover's delete
 * naming the conversation instead of the taking, 45 trials saw about five overlaps a run.
 */
const REPLICAS = 4;
const TRIALS = 45;
const AT_ONCE = 15;
const LEASE_MS = 6_000;

t.test('replicas taking over an expired lease at once never hold it together', async (t) => {
  const { db, uri } = await freshChatDatabase(t);
  // One client per replica, as separate processes would have: their operations really interleave.
  const clients = await Promise.all(Array.from({ length: REPLICAS }, () => new MongoClient(uri, { serverSelectionTimeoutMS: 5_000 }).connect()));
  t.teardown(() => Promise.all(clients.map((c) => c.close())));
  const locks = clients.map((c) => new ConversationLock(c.db().collection<LeaseDocument>(LEASE_COLLECTION), { leaseMs: LEASE_MS, waitMs: 30_000, pollMs: 5 }));
  await Promise.all(locks.map((lock) => lock.start()));
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);

  let overlaps = 0;
  let runs = 0;
  /** One trial: a crashed holder's lease on its own conversation, and every replica writing to it. */
  const trial = async (n: number) => {
    const key = `conversation-${n}`;
    await leases.insertOne({ _id: `crashed-${n}`, conversation: key, expires_at: new Date(Date.now() - 1_000) });
    let inside = 0;
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
  };
  for (let first = 0; first < TRIALS; first += AT_ONCE) {
    await Promise.all(Array.from({ length: Math.min(AT_ONCE, TRIALS - first) }, (_, i) => trial(first + i)));
  }
  await Promise.all(locks.map((lock) => lock.settled()));
  t.equal(runs, REPLICAS * TRIALS, 'every replica ran its work once per trial');
  t.equal(overlaps, 0, 'no two replicas ever held one lease at the same time');
  t.equal(await leases.countDocuments({}), 0, 'every lease was released');
});
