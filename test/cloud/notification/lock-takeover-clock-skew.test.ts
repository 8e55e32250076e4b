/**
 * Lock takeover between replicas whose wall clocks disagree, on the real FerretDB. A lock's `claimedAt`
 * is stamped by its holder's clock. Before, a waiter took a lock over once `claimedAt` was a lease older
 * than its own clock said: a replica whose clock was ahead took over locks still in use (and two writes
 * of one record raced, one entry lost), and a lock left by a replica whose clock was ahead blocked the
 * record for as long as the clock was ahead, plus the lease. Now a waiter takes a lock over only once it
 * has seen the same claim unchanged for a lease on its own monotonic clock.
 */
import t from 'tap';
import { ObjectId } from 'mongodb';
import { COLLECTIONS, MongoNotificationStore, WriteConflictError } from '../../../cloud/notification/store.js';
import { freshMongo, uniqueName } from './support/stack.js';

const HOUR = 60 * 60_000;
const RECORD_LOCK_LEASE_MS = 10_000;
const MIGRATION_LEASE_MS = 10 * 60_000;

interface LockDoc {
  _id: string;
  owner: string;
  claimedAt: Date;
  state?: 'running';
}

const recordLockId = (account: string, domain: string) => `preferences:${JSON.stringify([account, domain])}`;

t.test('a record lock in use is not taken over by a replica whose clock is ahead, nor one stamped by a clock behind', async (t) => {
  const { db } = await freshMongo(t);
  await new MongoNotificationStore(db).start();
  const locks = db.collection<LockDoc>(COLLECTIONS.locks);
  const cases = [
    // The waiter's clock an hour ahead of the holder's, which claimed the lock just now.
    { name: 'waiter ahead', waiterClock: () => Date.now() + HOUR, claimedAt: new Date() },
    // The holder's clock an hour behind: the same skew, seen from the other side.
    { name: 'holder behind', waiterClock: () => Date.now(), claimedAt: new Date(Date.now() - HOUR) },
  ];
  for (const { name, waiterClock, claimedAt } of cases) {
    const [account, domain] = [uniqueName('dana'), uniqueName('acme')];
    const held = { _id: recordLockId(account, domain), owner: uniqueName('replica-a'), claimedAt };
    await locks.insertOne(held);
    // Waits 300 ms of its monotonic clock: far less than the 10 s it must see the lock unchanged for.
    const waiter = new MongoNotificationStore(db, { recipientsCacheMs: 0, clock: waiterClock, recordLockWaitMs: 300 });
    await t.rejects(waiter.setPreferences(account, domain, [{ notificationType: 'temperature', isSubscribed: true }]), WriteConflictError, `${name}: the write answers 409`);
    t.same(await locks.findOne({ _id: held._id }), held, `${name}: the holder's lock is left to it`);
    t.equal(await db.collection(COLLECTIONS.preferences).countDocuments({ accountName: account }), 0, `${name}: nothing was written beside the holder`);
  }
});

t.test('the migration lock in use is not taken over by a replica whose clock is ahead', async (t) => {
  const { db } = await freshMongo(t);
  const locks = db.collection<LockDoc>(COLLECTIONS.migrations);
  const id = uniqueName('lock');
  const held: LockDoc = { _id: id, owner: 'replica-a', claimedAt: new Date(), state: 'running' };
  await locks.insertOne(held);
  const ahead = new MongoNotificationStore(db, { recipientsCacheMs: 0, clock: () => Date.now() + HOUR });
  t.equal(await ahead.claimLock(id, 'replica-b', MIGRATION_LEASE_MS), 'held');
  t.same(await locks.findOne({ _id: id }), held, "replica A's lock is left to it");
});

t.test('a lock stamped by a clock ahead is taken over once seen unchanged for a lease, counted on the waiter’s monotonic clock', async (t) => {
  const { db } = await freshMongo(t);
  const locks = db.collection<LockDoc>(COLLECTIONS.migrations);
  const id = uniqueName('lock');
  // Left by a replica whose clock was an hour ahead, which then stopped.
  await locks.insertOne({ _id: id, owner: 'stopped', claimedAt: new Date(Date.now() + HOUR), state: 'running' });
  let monotonic = 0;
  const store = new MongoNotificationStore(db, { recipientsCacheMs: 0, monotonicClock: () => monotonic });
  t.equal(await store.claimLock(id, 'waiter', MIGRATION_LEASE_MS), 'held', 'the first look only starts the count');
  monotonic += MIGRATION_LEASE_MS - 1;
  t.equal(await store.claimLock(id, 'waiter', MIGRATION_LEASE_MS), 'held', 'not yet a whole lease');
  monotonic += 1;
  t.equal(await store.claimLock(id, 'waiter', MIGRATION_LEASE_MS), 'claimed', 'a whole lease unchanged: taken over');
  t.match(await locks.findOne({ _id: id }), { owner: 'waiter', state: 'running' });
  t.equal(await locks.countDocuments({ _id: /^takeover:/ }), 0, 'the takeover lock is released');
});

t.test('a lock that changed meanwhile starts the count again', async (t) => {
  const { db } = await freshMongo(t);
  const locks = db.collection<LockDoc>(COLLECTIONS.migrations);
  const id = uniqueName('lock');
  await locks.insertOne({ _id: id, owner: 'first', claimedAt: new Date(Date.now() - HOUR), state: 'running' });
  let monotonic = 0;
  const store = new MongoNotificationStore(db, { recipientsCacheMs: 0, monotonicClock: () => monotonic });
  t.equal(await store.claimLock(id, 'waiter', MIGRATION_LEASE_MS), 'held');
  // The first holder released it and another replica claimed it, with a stamp as old.
  await locks.deleteOne({ _id: id });
  await locks.insertOne({ _id: id, owner: 'second', claimedAt: new Date(Date.now() - HOUR), state: 'running' });
  monotonic += MIGRATION_LEASE_MS;
  t.equal(await store.claimLock(id, 'waiter', MIGRATION_LEASE_MS), 'held', "the second holder's claim is new to this replica");
  t.match(await locks.findOne({ _id: id }), { owner: 'second' });
  monotonic += MIGRATION_LEASE_MS;
  t.equal(await store.claimLock(id, 'waiter', MIGRATION_LEASE_MS), 'claimed', 'seen unchanged for a lease since: taken over');
});

t.test('a preferences write finding a lock left by a replica whose clock was ahead lands after the lease', async (t) => {
  const { db } = await freshMongo(t);
  await new MongoNotificationStore(db).start();
  const locks = db.collection<LockDoc>(COLLECTIONS.locks);
  const [account, domain] = [uniqueName('dana'), uniqueName('acme')];
  await locks.insertOne({ _id: recordLockId(account, domain), owner: new ObjectId().toHexString(), claimedAt: new Date(Date.now() + HOUR) });
  // A monotonic clock that moves on half a second each time it is read: the wait's 20 s are twice the
  // lease, however many reads a poll takes.
  let monotonic = 0;
  const store = new MongoNotificationStore(db, { recipientsCacheMs: 0, recordLockWaitMs: 20_000, monotonicClock: () => (monotonic += 500) });
  const record = await store.setPreferences(account, domain, [{ notificationType: 'temperature', isSubscribed: true }]);
  t.same(record.preferences, [{ notificationType: 'temperature', isSubscribed: true }], 'the write landed');
  t.ok(monotonic >= RECORD_LOCK_LEASE_MS, 'after the lease had passed on the waiter’s clock');
  t.equal(await locks.countDocuments({}), 0, 'the left-over lock, the takeover lock and the write’s own are all gone');
});
