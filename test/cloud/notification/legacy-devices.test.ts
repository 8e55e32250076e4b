/**
 * Devices stored by an earlier version, unique per (account, endpoint), on a real FerretDB: the same
 * endpoint under two accounts no longer stops the service from starting. The newest registration of an
 * endpoint is kept, the others are deleted, and the unique index is then in force.
 */
import { ObjectId } from 'mongodb';
import t from 'tap';
import { COLLECTIONS, MongoNotificationStore } from '../../../cloud/notification/store.js';
import { freshMongo } from './support/stack.js';

const keys = (tag: string) => ({ p256dh: `p256dh-${tag}`, auth: `auth-${tag}` });

t.test('start keeps the newest registration of an endpoint stored twice, then enforces one per endpoint', async (t) => {
  const { db } = await freshMongo(t);
  const devices = db.collection(COLLECTIONS.devices);
  const shared = 'https://push.example.invalid/shared-capability';
  await devices.insertMany([
    { _id: new ObjectId(), accountName: 'old-owner', endpoint: shared, keys: keys('old'), createdAt: '2024-01-01T00:00:00.000Z', updatedAt: '2024-01-01T00:00:00.000Z' },
    { _id: new ObjectId(), accountName: 'new-owner', endpoint: shared, keys: keys('new'), createdAt: '2024-02-01T00:00:00.000Z', updatedAt: '2024-02-01T00:00:00.000Z' },
    { _id: new ObjectId(), accountName: 'old-owner', endpoint: shared, keys: keys('older'), createdAt: '2023-06-01T00:00:00.000Z', updatedAt: '2023-06-01T00:00:00.000Z' },
    { _id: new ObjectId(), accountName: 'solo', endpoint: 'https://push.example.invalid/solo', keys: keys('solo'), createdAt: '2024-01-01T00:00:00.000Z', updatedAt: '2024-01-01T00:00:00.000Z' },
  ]);

  const store = new MongoNotificationStore(db, { recipientsCacheMs: 0 });
  await store.start();

  const left = await devices.find({}, { projection: { _id: 0, accountName: 1, endpoint: 1, keys: 1 } }).sort({ endpoint: 1 }).toArray();
  t.same(left, [
    { accountName: 'new-owner', endpoint: shared, keys: keys('new') },
    { accountName: 'solo', endpoint: 'https://push.example.invalid/solo', keys: keys('solo') },
  ]);
  await t.rejects(
    devices.insertOne({ _id: new ObjectId(), accountName: 'x', endpoint: shared, keys: keys('x'), createdAt: 'x', updatedAt: 'x' }),
    { code: 11000 },
    'the unique index on endpoint is in force',
  );
  t.equal(await store.dropSupersededDevices(), 0, 'nothing left to drop');

  const again = new MongoNotificationStore(db, { recipientsCacheMs: 0 });
  await again.start();
  t.equal(await devices.countDocuments({}), 2, 'a second start changes nothing');
});
