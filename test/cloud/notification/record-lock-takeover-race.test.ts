/**
 * Preferences writes from many replicas racing over a record lock a stopped replica left behind, on the
 * real FerretDB: the takeover must be made by one replica only (FerretDB 1.x makes neither an update nor
 * a delete exclusive), or two writes of the record run at once and one entry is lost. On the real
 * monotonic clock: each replica sees the lock within a few milliseconds of the others, and all of them
 * take it over about 10 s (the lease) later, within a poll of each other. Claims between replicas at
 * once, on the migration's lock: lock-takeover-race.test.ts.
 */
import t from 'tap';
import { COLLECTIONS, MongoNotificationStore } from '../../../cloud/notification/store.js';
import { expiredLock, replicas, spread } from './support/lock-replicas.js';
import { freshMongo, uniqueName } from './support/stack.js';

const REPLICAS = 20;

t.test('preferences writes racing over an expired record lock from many replicas all land', async (t) => {
  const { db, uri } = await freshMongo(t);
  await new MongoNotificationStore(db).start();
  // The takeover comes a whole lease (10 s) after each replica first saw the lock; then the 20 writes go
  // one after another. The default 15 s wait would leave them 5 s on a loaded machine.
  const stores = await replicas(t, uri, REPLICAS, { recordLockWaitMs: 60_000 });
  const recordLocks = db.collection<{ _id: string; owner: string; claimedAt: Date }>(COLLECTIONS.locks);
  const account = uniqueName('dana');
  const domain = uniqueName('acme');
  await recordLocks.insertOne(expiredLock(`preferences:${JSON.stringify([account, domain])}`));
  const types = stores.map((_, i) => `type-${i}`);
  await Promise.all(stores.map((store, i) => spread(() => store.setPreferences(account, domain, [{ notificationType: types[i] as string, isSubscribed: true }]))));
  const record = await db.collection<{ preferences: Array<{ notificationType: string }> }>(COLLECTIONS.preferences).findOne({ accountName: account, domainName: domain });
  const stored = new Set(record?.preferences.map((p) => p.notificationType));
  t.same(types.filter((type) => !stored.has(type)), [], 'every write that answered kept its entry');
  t.equal(await recordLocks.countDocuments({}), 0, 'every record lock, and every takeover lock, was released');
});
