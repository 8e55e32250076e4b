/**
 * The recipient lists the store reuses for `recipientsCacheMs`, on a real FerretDB: a fresh list is
 * reused, and an expired one is dropped at the next lookup, whatever it was asked for, instead of being
 * held, with its whole recipient array, for the life of the process.
 */
import t from 'tap';
import { MongoNotificationStore } from '../../../cloud/notification/store.js';
import { browserKeys } from './support/harness.js';
import { freshMongo, uniqueName } from './support/stack.js';

t.test('an expired recipient list is dropped at the next lookup; a fresh one is reused', async (t) => {
  const { db } = await freshMongo(t);
  let now = 0;
  const store = new MongoNotificationStore(db, { recipientsCacheMs: 5000, monotonicClock: () => now });
  await store.start();
  // Writes through another replica: they do not clear this store's lists.
  const other = new MongoNotificationStore(db, { recipientsCacheMs: 0 });
  const [acme, globex] = [uniqueName('acme'), uniqueName('globex')];
  const ana = uniqueName('ana');
  await other.saveDevice(ana, { endpoint: `https://push.example.invalid/${ana}/1`, keys: browserKeys() });
  await other.setPreferences(ana, acme, [{ notificationType: 'temperature', isSubscribed: true }]);
  await other.setPreferences(ana, globex, [{ notificationType: 'temperature', isSubscribed: true }]);

  t.equal((await store.recipientsIn(acme, 'temperature')).length, 1);
  t.equal(store.cachedRecipientLists, 1);

  now += 3000;
  t.equal((await store.recipientsIn(globex, 'temperature')).length, 1);
  await other.saveDevice(ana, { endpoint: `https://push.example.invalid/${ana}/2`, keys: browserKeys() });
  t.equal((await store.recipientsIn(globex, 'temperature')).length, 1, 'a fresh list is reused');
  t.equal(store.cachedRecipientLists, 2);

  now += 3000; // acme's list is 6 s old, globex's 3 s
  t.equal((await store.recipientsIn(uniqueName('initech'), 'temperature')).length, 0);
  t.equal(store.cachedRecipientLists, 2, 'the expired acme list is dropped though acme was not asked for; globex’s and the new one are held');

  now += 5000; // every list has expired
  t.equal((await store.recipientsIn(globex, 'temperature')).length, 2, 'an expired list is read again');
  t.equal(store.cachedRecipientLists, 1, 'only the list just read is held');
});
