/**
 * Devices stored before endpoints were normalised, on a real FerretDB. Earlier versions stored the
 * endpoint as sent (`https://PUSH.example.invalid:443/…`); saves now look a device up by its href, so
 * such a device would not be found, and another account could register its endpoint beside it. Start
 * rewrites them to their href; where the href is stored as well, the later registration is kept, and a
 * replica starting at the same time leaves what the other moved.
 */
import { ObjectId } from 'mongodb';
import t from 'tap';
import { COLLECTIONS, MongoNotificationStore } from '../../../cloud/notification/store.js';
import { dbWith } from '../../support/db-with.js';
import { freshMongo } from './support/stack.js';

const keys = (tag: string) => ({ p256dh: `p256dh-${tag}`, auth: `auth-${tag}` });

function device(accountName: string, endpoint: string, tag: string, updatedAt: string) {
  return { _id: new ObjectId(), accountName, endpoint, keys: keys(tag), createdAt: updatedAt, updatedAt };
}

t.test('start stores old spellings under their href, and a subscribe of the endpoint then finds the device', async (t) => {
  const { db } = await freshMongo(t);
  const devices = db.collection(COLLECTIONS.devices);
  const longPath = '漢'.repeat(300); // stored fine as sent; its href (2,700 characters) /subscribe refuses
  await devices.insertMany([
    device('ana', 'https://PUSH.example.invalid:443/fcm/send/ana', 'ana', '2024-01-01T00:00:00.000Z'),
    // The same subscription under two spellings: the later registration is kept, whichever spelling it has.
    device('old', 'https://push.example.invalid/fcm/send/pair-1', 'old-1', '2024-01-01T00:00:00.000Z'),
    device('new', 'https://Push.Example.Invalid/fcm/send/pair-1#x', 'new-1', '2024-02-01T00:00:00.000Z'),
    device('old', 'https://PUSH.example.invalid/fcm/send/pair-2', 'old-2', '2024-01-01T00:00:00.000Z'),
    device('new', 'https://push.example.invalid/fcm/send/pair-2', 'new-2', '2024-02-01T00:00:00.000Z'),
    device('long', `https://push.example.invalid/${longPath}`, 'long', '2024-01-01T00:00:00.000Z'),
  ]);

  const store = new MongoNotificationStore(db, { recipientsCacheMs: 0 });
  await store.start();

  const left = await devices.find({}, { projection: { _id: 0, accountName: 1, endpoint: 1, keys: 1 } }).sort({ accountName: 1, endpoint: 1 }).toArray();
  t.same(left, [
    { accountName: 'ana', endpoint: 'https://push.example.invalid/fcm/send/ana', keys: keys('ana') },
    { accountName: 'long', endpoint: `https://push.example.invalid/${longPath}`, keys: keys('long') },
    { accountName: 'new', endpoint: 'https://push.example.invalid/fcm/send/pair-1', keys: keys('new-1') },
    { accountName: 'new', endpoint: 'https://push.example.invalid/fcm/send/pair-2', keys: keys('new-2') },
  ]);

  const endpoint = 'https://push.example.invalid/fcm/send/ana';
  t.equal(await store.saveDevice('mallory', { endpoint, keys: keys('mallory') }), 'held_by_another_account', 'the takeover rule applies to the old device');
  t.equal(await devices.countDocuments({ accountName: 'mallory' }), 0);
  t.equal(await store.removeDevice(endpoint, keys('ana')), true, 'a 410 for the endpoint deletes the old device');

  const again = new MongoNotificationStore(db, { recipientsCacheMs: 0 });
  await again.start();
  t.equal(await again.normaliseStoredEndpoints(), 0, 'nothing left to rewrite');
  t.equal(await devices.countDocuments({}), 3, 'a second start changes nothing');
});

t.test('two replicas starting at once: the one behind leaves the devices the other moved', async (t) => {
  const { db } = await freshMongo(t);
  const devices = db.collection(COLLECTIONS.devices);
  await devices.insertMany([
    device('ana', 'https://PUSH.example.invalid:443/fcm/send/ana', 'ana', '2024-01-01T00:00:00.000Z'),
    device('bo', 'https://push.example.invalid:443/fcm/send/bo', 'bo', '2024-01-01T00:00:00.000Z'),
  ]);
  // What the replica behind read before the first rewrote anything: the old spellings.
  const read = await devices.find({}, { projection: { endpoint: 1, updatedAt: 1 } }).toArray();

  const first = new MongoNotificationStore(db, { recipientsCacheMs: 0 });
  t.equal(await first.normaliseStoredEndpoints(), 2, 'the first replica moves both');
  const behind = new MongoNotificationStore(
    dbWith(db, { [COLLECTIONS.devices]: { find: () => read } }),
    { recipientsCacheMs: 0 },
  );
  t.equal(await behind.normaliseStoredEndpoints(), 2, 'the replica behind worked from the old spellings it had read');

  const left = await devices.find({}, { projection: { _id: 0, accountName: 1, endpoint: 1 } }).sort({ accountName: 1 }).toArray();
  t.same(left, [
    { accountName: 'ana', endpoint: 'https://push.example.invalid/fcm/send/ana' },
    { accountName: 'bo', endpoint: 'https://push.example.invalid/fcm/send/bo' },
  ], 'each device is still stored, once, at its href');
});
