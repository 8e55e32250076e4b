/**
 * Start on a database the seed's service set up, on a real FerretDB: its indexes carry the driver's
 * default names (`endpoint_1`, `accountName_1`, `accountName_1_domainName_1`). Creating ours under
 * other names beside them failed with IndexOptionsConflict ("Index already exists with a different
 * name"), so the service did not start. An index with the same keys and uniqueness is now kept, under
 * whatever name; one with the same keys that is not unique is replaced, after the duplicates it allowed
 * are reduced to the newest, as for devices stored by an earlier version.
 */
import { ObjectId, type Db } from 'mongodb';
import t, { type Test } from 'tap';
import { COLLECTIONS, MongoNotificationStore } from '../../../cloud/notification/store.js';
import { freshMongo } from './support/stack.js';

const keys = (tag: string) => ({ p256dh: `p256dh-${tag}`, auth: `auth-${tag}` });

async function indexesOf(db: Db, collection: string): Promise<Array<{ name: string; key: unknown; unique: boolean }>> {
  const indexes = await db.collection(collection).listIndexes().toArray();
  return indexes.map((index) => ({ name: index.name as string, key: index.key as unknown, unique: index.unique === true })).sort((a, b) => a.name.localeCompare(b.name));
}

async function uniquenessHolds(t: Test, db: Db): Promise<void> {
  const devices = db.collection(COLLECTIONS.devices);
  const records = db.collection(COLLECTIONS.preferences);
  const endpoint = `https://push.example.invalid/${new ObjectId().toHexString()}`;
  await devices.insertOne({ _id: new ObjectId(), accountName: 'a', endpoint, keys: keys('a'), createdAt: 'x', updatedAt: 'x' });
  await t.rejects(devices.insertOne({ _id: new ObjectId(), accountName: 'b', endpoint, keys: keys('b'), createdAt: 'x', updatedAt: 'x' }), { code: 11000 }, 'one device per endpoint');
  const domainName = new ObjectId().toHexString();
  await records.insertOne({ _id: new ObjectId(), accountName: 'a', domainName, preferences: [], createdAt: 'x' });
  await t.rejects(records.insertOne({ _id: new ObjectId(), accountName: 'a', domainName, preferences: [], createdAt: 'x' }), { code: 11000 }, 'one record per (account, domain)');
}

t.test('the seed’s unique indexes under default names: start keeps them, and uniqueness holds', async (t) => {
  const { db } = await freshMongo(t);
  await db.collection(COLLECTIONS.devices).createIndex({ endpoint: 1 }, { unique: true });
  await db.collection(COLLECTIONS.devices).createIndex({ accountName: 1 });
  await db.collection(COLLECTIONS.preferences).createIndex({ accountName: 1, domainName: 1 }, { unique: true });
  await db.collection(COLLECTIONS.devices).insertOne({ _id: new ObjectId(), accountName: 'ana', endpoint: 'https://push.example.invalid/ana', keys: keys('ana'), createdAt: 'x', updatedAt: 'x' });
  const before = { devices: await indexesOf(db, COLLECTIONS.devices), records: await indexesOf(db, COLLECTIONS.preferences) };

  const store = new MongoNotificationStore(db, { recipientsCacheMs: 0 });
  await store.start();

  t.same(await indexesOf(db, COLLECTIONS.devices), before.devices, 'the devices’ indexes are the seed’s, no second one on the same keys');
  t.same(
    await indexesOf(db, COLLECTIONS.preferences),
    [...before.records, { name: 'domainName', key: { domainName: 1 }, unique: false }].sort((a, b) => a.name.localeCompare(b.name)),
    'the missing domainName index is added',
  );
  t.equal(await store.saveDevice('ana', { endpoint: 'https://push.example.invalid/ana', keys: keys('ana') }), 'saved');
  t.equal(await store.saveDevice('bob', { endpoint: 'https://push.example.invalid/ana', keys: keys('bob') }), 'held_by_another_account');
  await uniquenessHolds(t, db);

  await new MongoNotificationStore(db, { recipientsCacheMs: 0 }).start();
  t.same(await indexesOf(db, COLLECTIONS.devices), before.devices, 'a second start changes nothing');
});

t.test('indexes of the same keys that are not unique: the duplicates are reduced to the newest, and the indexes made unique', async (t) => {
  const { db } = await freshMongo(t);
  const devices = db.collection(COLLECTIONS.devices);
  const records = db.collection(COLLECTIONS.preferences);
  await devices.createIndex({ endpoint: 1 });
  await records.createIndex({ accountName: 1, domainName: 1 });
  const shared = 'https://push.example.invalid/shared';
  await devices.insertMany([
    { _id: new ObjectId(), accountName: 'old-owner', endpoint: shared, keys: keys('old'), createdAt: '2024-01-01T00:00:00.000Z', updatedAt: '2024-01-01T00:00:00.000Z' },
    { _id: new ObjectId(), accountName: 'new-owner', endpoint: shared, keys: keys('new'), createdAt: '2024-02-01T00:00:00.000Z', updatedAt: '2024-02-01T00:00:00.000Z' },
  ]);
  const on = (type: string) => [{ notificationType: type, isSubscribed: true }];
  await records.insertMany([
    { _id: new ObjectId(), accountName: 'ana', domainName: 'acme', preferences: on('temperature'), createdAt: '2024-01-01T00:00:00.000Z', updatedAt: '2024-03-01T00:00:00.000Z' },
    { _id: new ObjectId(), accountName: 'ana', domainName: 'acme', preferences: on('airQuality'), createdAt: '2024-02-01T00:00:00.000Z', updatedAt: '2024-02-01T00:00:00.000Z' },
    { _id: new ObjectId(), accountName: 'ana', domainName: 'globex', preferences: on('peopleCount'), createdAt: '2024-01-01T00:00:00.000Z' },
  ]);

  const store = new MongoNotificationStore(db, { recipientsCacheMs: 0 });
  await store.start();

  t.same(await devices.find({}, { projection: { _id: 0, accountName: 1 } }).toArray(), [{ accountName: 'new-owner' }], 'the newest registration of the endpoint is kept');
  t.same(
    (await store.preferencesOf('ana')).map((r) => [r.domainName, r.preferences]),
    [
      ['acme', on('temperature')],
      ['globex', on('peopleCount')],
    ],
    'the newest write of each (account, domain) is kept',
  );
  t.same(
    (await indexesOf(db, COLLECTIONS.devices)).filter((index) => index.name !== '_id_' && index.name !== 'accountName'),
    [{ name: 'endpoint_unique', key: { endpoint: 1 }, unique: true }],
    'the endpoint index is unique now, and alone on its keys',
  );
  await uniquenessHolds(t, db);
});
