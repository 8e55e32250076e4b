/**
 * Replicas polling one expired lock take it over at once. FerretDB 1.x checks an update's filter on its
 * read and writes the document back by `_id`, so an `updateOne({_id, owner: <expired owner>})` from each
 * of them could match for several, each then finding itself the owner for a moment: two holders of one
 * preferences record lock, and one write lost. Each claimer here is a store on a client of its own (a
 * replica), all against the real FerretDB. The claims start a few milliseconds apart, at random, as
 * polling replicas' do: started in lockstep, every read comes before every write and the race hides.
 * Before the takeover was made exclusive, 20 replicas over 100 rounds had two or more claimers in
 * about one round in six.
 */
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { MongoClient } from 'mongodb';
import { COLLECTIONS, MongoNotificationStore } from '../../../cloud/notification/store.js';
import { freshMongo, uniqueName, type Teardown } from './support/stack.js';

const REPLICAS = 20;
const ROUNDS = 100;
/** Claims start up to this many ms apart. */
const SPREAD_MS = 4;
const LEASE_MS = 10_000;

/** `count` stores on one database, each on a client of its own (closed at teardown). */
async function replicas(t: Teardown, uri: string, count: number): Promise<MongoNotificationStore[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const client = new MongoClient(uri, { serverSelectionTimeoutMS: 10_000 });
      await client.connect();
      t.teardown(() => client.close());
      return new MongoNotificationStore(client.db(), { recipientsCacheMs: 0 });
    }),
  );
}

/** Runs `task` after a random pause of up to {@link SPREAD_MS}. */
async function spread<T>(task: () => Promise<T>): Promise<T> {
  await sleep(Math.random() * SPREAD_MS);
  return task();
}

/** A lock document whose holder stopped a minute ago, past the lease. */
function expiredLock(id: string): { _id: string; owner: string; claimedAt: Date } {
  return { _id: id, owner: uniqueName('stopped'), claimedAt: new Date(Date.now() - 60_000) };
}

t.test('an expired lock polled by many replicas at once is taken over by exactly one, in every round', async (t) => {
  const { db, uri } = await freshMongo(t);
  const stores = await replicas(t, uri, REPLICAS);
  const locks = db.collection<{ _id: string; owner: string; claimedAt: Date; state: 'running' }>(COLLECTIONS.migrations);
  const wrong: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const id = uniqueName('lock');
    await locks.insertOne({ ...expiredLock(id), state: 'running' });
    const owners = stores.map(() => uniqueName('replica'));
    const answers = await Promise.all(stores.map((store, i) => spread(() => store.claimLock(id, owners[i] as string, LEASE_MS))));
    const winners = owners.filter((_, i) => answers[i] === 'claimed');
    const stored = await locks.findOne({ _id: id });
    if (winners.length !== 1 || stored?.owner !== winners[0]) wrong.push(`round ${round}: ${winners.length} claimers got it`);
  }
  t.same(wrong, [], 'in every round exactly one claimer got the lock, and it is the stored owner');
  t.equal(await locks.countDocuments({ _id: /^takeover:/ }), 0, 'no takeover lock is left behind');
});

t.test('an expired lock whose takeover was left half-way (its taker stopped) is still taken over, once', async (t) => {
  const { db, uri } = await freshMongo(t);
  const stores = await replicas(t, uri, REPLICAS);
  const locks = db.collection<{ _id: string; owner: string; claimedAt: Date; state?: 'running' }>(COLLECTIONS.migrations);
  const id = uniqueName('lock');
  const lock = expiredLock(id);
  await locks.insertOne({ ...lock, state: 'running' });
  await locks.insertOne({ _id: `takeover:${JSON.stringify([id, lock.owner, lock.claimedAt.getTime()])}`, owner: uniqueName('stopped'), claimedAt: lock.claimedAt });
  const answers = await Promise.all(stores.map((store, i) => spread(() => store.claimLock(id, `replica-${i}`, LEASE_MS))));
  t.equal(answers.filter((a) => a === 'claimed').length, 1, 'exactly one replica holds it');
  t.match(await locks.findOne({ _id: id }), { owner: /^replica-/, state: 'running' });
  t.equal(await locks.countDocuments({ _id: /^takeover:/ }), 0, 'the takeover locks are released');
});

t.test('preferences writes racing over an expired record lock from many replicas all land', async (t) => {
  const { db, uri } = await freshMongo(t);
  await new MongoNotificationStore(db).start();
  const stores = await replicas(t, uri, REPLICAS);
  const recordLocks = db.collection<{ _id: string; owner: string; claimedAt: Date }>(COLLECTIONS.locks);
  const incomplete: string[] = [];
  for (let round = 0; round < 3; round++) {
    const account = uniqueName('dana');
    const domain = uniqueName('acme');
    await recordLocks.insertOne(expiredLock(`preferences:${JSON.stringify([account, domain])}`));
    const types = stores.map((_, i) => `type-${i}`);
    await Promise.all(stores.map((store, i) => spread(() => store.setPreferences(account, domain, [{ notificationType: types[i] as string, isSubscribed: true }]))));
    const record = await db.collection<{ preferences: Array<{ notificationType: string }> }>(COLLECTIONS.preferences).findOne({ accountName: account, domainName: domain });
    const stored = new Set(record?.preferences.map((p) => p.notificationType));
    const lost = types.filter((type) => !stored.has(type));
    if (lost.length > 0) incomplete.push(`round ${round}: lost ${lost.join(', ')}`);
  }
  t.same(incomplete, [], 'every write that answered kept its entry');
  t.equal(await recordLocks.countDocuments({}), 0, 'every record lock, and every takeover lock, was released');
});
