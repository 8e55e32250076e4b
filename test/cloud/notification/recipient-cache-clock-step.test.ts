/**
 * The recipient lists the store reuses for `recipientsCacheMs` are aged on the monotonic clock, on a
 * real FerretDB. Before, they were aged on the wall clock: one stepped back an hour (NTP, an RTC) kept
 * every list for that hour, so an opt-out or a removed device made through another replica went on
 * getting pushes; one stepped forward dropped fresh lists.
 */
import t from 'tap';
import { MongoNotificationStore } from '../../../cloud/notification/store.js';
import { browserKeys } from './support/harness.js';
import { freshMongo, uniqueName } from './support/stack.js';

const HOUR = 60 * 60_000;

t.test('a wall clock stepped either way neither keeps a list past its 5 s nor drops it before', async (t) => {
  const { db } = await freshMongo(t);
  let wall = Date.parse('2026-01-01T00:00:00.000Z');
  let monotonic = 0;
  const store = new MongoNotificationStore(db, { recipientsCacheMs: 5000, clock: () => wall, monotonicClock: () => monotonic });
  await store.start();
  // Writes through another replica: they do not clear this store's lists.
  const other = new MongoNotificationStore(db, { recipientsCacheMs: 0 });
  const acme = uniqueName('acme');
  const ana = uniqueName('ana');
  await other.saveDevice(ana, { endpoint: `https://push.example.invalid/${ana}/1`, keys: browserKeys() });
  await other.setPreferences(ana, acme, [{ notificationType: 'temperature', isSubscribed: true }]);
  t.equal((await store.recipientsIn(acme, 'temperature')).length, 1);

  await other.saveDevice(ana, { endpoint: `https://push.example.invalid/${ana}/2`, keys: browserKeys() });
  wall += HOUR;
  monotonic += 1000;
  t.equal((await store.recipientsIn(acme, 'temperature')).length, 1, 'stepped forward an hour, 1 s later: the list is still reused');

  await other.setPreferences(ana, acme, [{ notificationType: 'temperature', isSubscribed: false }]);
  wall -= 2 * HOUR;
  monotonic += 5000;
  t.equal((await store.recipientsIn(acme, 'temperature')).length, 0, 'stepped back an hour, 6 s later: the list is read again, and the opt-out is seen');
});
