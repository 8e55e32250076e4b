/**
 * The startup migration on a real FerretDB: every account with temperature on gets each other alertable
 * metric switched on once, a stored choice is never overwritten, a marker per metric stops re-runs, two
 * replicas starting at once migrate each metric once, a claim left by a stopped replica is taken over, and
 * a choice saved through a serving replica while the migration runs is kept.
 */
import { performance } from 'node:perf_hooks';
import { MongoClient, ObjectId, type Db } from 'mongodb';
import t from 'tap';
import { silentLogger } from '../../../shared/logger.js';
import { MIGRATION_LOCK_ID, markerId, migrateAlertableMetrics } from '../../../cloud/notification/migration.js';
import { COLLECTIONS, MongoNotificationStore } from '../../../cloud/notification/store.js';
import { freshMongo, uniqueName, type Teardown } from './support/stack.js';

const logger = silentLogger();
const on = (notificationType: string) => ({ notificationType, isSubscribed: true });
const off = (notificationType: string) => ({ notificationType, isSubscribed: false });

/** A record as an earlier version of the service stored it: no derived fields. */
async function legacy(db: Db, accountName: string, domainName: string, preferences: Array<{ notificationType: string; isSubscribed: boolean }>) {
  await db.collection(COLLECTIONS.preferences).insertOne({ _id: new ObjectId(), accountName, domainName, preferences, createdAt: '2024-03-01T00:00:00.000Z' });
}

async function preferencesOf(db: Db, accountName: string) {
  const doc = await db.collection(COLLECTIONS.preferences).findOne({ accountName });
  return doc?.preferences as unknown;
}

/** A second client on the same database: another replica. */
async function replica(t: Teardown, uri: string, db: Db): Promise<MongoNotificationStore> {
  const client = new MongoClient(uri);
  await client.connect();
  t.teardown(() => client.close());
  const store = new MongoNotificationStore(client.db(db.databaseName), { recipientsCacheMs: 0 });
  await store.start();
  return store;
}

t.test('switches each metric on where temperature is on, never overwriting a stored choice', async (t) => {
  const { db } = await freshMongo(t);
  const store = new MongoNotificationStore(db, { recipientsCacheMs: 0 });
  await store.start();
  await legacy(db, 'a', 'acme', [on('temperature')]);
  await legacy(db, 'b', 'acme', [on('temperature'), off('airQuality')]);
  await legacy(db, 'c', 'acme', [off('temperature')]);
  await legacy(db, 'd', 'acme', [on('peopleCount')]);
  await store.setPreferences('e', 'acme', [on('temperature'), off('peopleCount')]);

  const report = await migrateAlertableMetrics(store, logger);
  t.same(report, { backfilled: 4, metrics: { peopleCount: 2, airQuality: 2 } });
  t.same(await preferencesOf(db, 'a'), [on('temperature'), on('peopleCount'), on('airQuality')]);
  t.same(await preferencesOf(db, 'b'), [on('temperature'), off('airQuality'), on('peopleCount')], 'b keeps airQuality off');
  t.same(await preferencesOf(db, 'c'), [off('temperature')], 'temperature off: untouched');
  t.same(await preferencesOf(db, 'd'), [on('peopleCount')], 'no temperature entry: untouched');
  t.same(await preferencesOf(db, 'e'), [on('temperature'), off('peopleCount'), on('airQuality')], 'e keeps peopleCount off');

  const airQuality = (await store.recipientsIn('acme', 'airQuality')).map((r) => r.accountName);
  t.same(airQuality, [], 'no devices yet, so no recipients');
  await store.saveDevice('a', { endpoint: 'https://push.example.invalid/a', keys: { p256dh: 'x', auth: 'y' } });
  await store.saveDevice('b', { endpoint: 'https://push.example.invalid/b', keys: { p256dh: 'x', auth: 'y' } });
  t.same((await store.recipientsIn('acme', 'airQuality')).map((r) => r.accountName), ['a'], 'the migrated opt-in routes pushes; b stays opted out');

  t.test('the markers stop a second run: a record written later in the old shape is left alone', async (t) => {
    await legacy(db, 'f', 'acme', [on('temperature')]);
    const again = await migrateAlertableMetrics(store, logger);
    t.same(again, { backfilled: 1, metrics: { peopleCount: 'done', airQuality: 'done' } });
    t.same(await preferencesOf(db, 'f'), [on('temperature')]);
    const markers = await db.collection(COLLECTIONS.migrations).find({}).sort({ _id: 1 }).toArray();
    t.same(markers.map((m) => [m._id, m.state]), [
      [markerId('airQuality'), 'done'],
      [markerId('peopleCount'), 'done'],
    ]);
  });
});

t.test('two replicas starting at once: one migrates, the other waits for it, no entry is lost or doubled', async (t) => {
  const { db, uri } = await freshMongo(t);
  const accounts = Array.from({ length: 30 }, () => uniqueName('acct'));
  for (const account of accounts) await legacy(db, account, 'acme', [on('temperature')]);
  const [one, two] = [await replica(t, uri, db), await replica(t, uri, db)];
  const [first, second] = await Promise.all([migrateAlertableMetrics(one, logger), migrateAlertableMetrics(two, logger)]);
  const ran = [first, second].filter((r) => typeof r.metrics.peopleCount === 'number');
  t.equal(ran.length, 1, `one replica ran the migration (${JSON.stringify([first, second])})`);
  t.same(ran[0]?.metrics, { peopleCount: 30, airQuality: 30 });
  const other = ran[0] === first ? second : first;
  t.same(other.metrics, { peopleCount: 'done', airQuality: 'done' }, 'the other replica waited for the first to finish');
  for (const account of accounts) {
    const prefs = (await preferencesOf(db, account)) as Array<{ notificationType: string }>;
    if (prefs.length !== 3) t.fail(`${account}: ${JSON.stringify(prefs)}`);
  }
  t.pass('every account has exactly one entry per metric');
});

t.test('a lock left by a replica that stopped mid-way is taken over after its lease', async (t) => {
  const { db } = await freshMongo(t);
  // The lease counts on this replica's monotonic clock from its first look: moved on by hand below.
  let moved = 0;
  const store = new MongoNotificationStore(db, { recipientsCacheMs: 0, monotonicClock: () => performance.now() + moved });
  await store.start();
  await legacy(db, 'a', 'acme', [on('temperature'), on('peopleCount')]);
  const markers = db.collection<{ _id: string; state: string; owner?: string; claimedAt?: Date }>(COLLECTIONS.migrations);
  await markers.insertOne({ _id: markerId('peopleCount'), state: 'done' });
  await markers.insertOne({ _id: MIGRATION_LOCK_ID, state: 'running', owner: 'gone', claimedAt: new Date(Date.now() - 60_000) });
  const held = await migrateAlertableMetrics(store, logger, { leaseMs: 10 * 60_000, waitMs: 0 });
  t.equal(held.metrics.airQuality, 'held', 'within the lease the other replica is trusted to finish');
  t.same(await preferencesOf(db, 'a'), [on('temperature'), on('peopleCount')]);
  moved += 30_000;
  const taken = await migrateAlertableMetrics(store, logger, { leaseMs: 30_000 });
  t.equal(taken.metrics.airQuality, 1, 'after the lease it is taken over and finished');
  t.same(await preferencesOf(db, 'a'), [on('temperature'), on('peopleCount'), on('airQuality')]);
  t.equal(taken.metrics.peopleCount, 'done', 'a finished metric is not run again');
  t.equal((await markers.findOne({ _id: markerId('airQuality') }))?.state, 'done');
  t.equal(await markers.countDocuments({ _id: MIGRATION_LOCK_ID }), 0, 'the lock is released');
});

t.test('a replica finding the lock held serves only once the holder has finished', async (t) => {
  const { db } = await freshMongo(t);
  const store = new MongoNotificationStore(db, { recipientsCacheMs: 0 });
  await store.start();
  await legacy(db, 'a', 'acme', [on('temperature')]);
  const markers = db.collection<{ _id: string; state: string; owner?: string; claimedAt?: Date }>(COLLECTIONS.migrations);
  await markers.insertOne({ _id: MIGRATION_LOCK_ID, state: 'running', owner: 'other-replica', claimedAt: new Date() });
  let holderFinished = false;
  const waiting = migrateAlertableMetrics(store, logger, { pollMs: 20 }).then((report) => ({ report, holderFinished }));
  // The holder takes its time, then records both markers and releases the lock.
  await new Promise((resolve) => setTimeout(resolve, 300));
  holderFinished = true;
  await markers.insertMany([
    { _id: markerId('peopleCount'), state: 'done' },
    { _id: markerId('airQuality'), state: 'done' },
  ]);
  await markers.deleteOne({ _id: MIGRATION_LOCK_ID });
  const { report, holderFinished: finishedFirst } = await waiting;
  t.ok(finishedFirst, 'the waiting replica went on only after the holder finished');
  t.same(report.metrics, { peopleCount: 'done', airQuality: 'done' });
  t.same(await preferencesOf(db, 'a'), [on('temperature')], 'and it ran nothing itself: the holder owned the update');
});

t.test('a choice saved through a serving replica while the migration runs is kept', async (t) => {
  // Before, the migration's updateMany wrote back, on FerretDB 1.x, records as it had read them: a
  // user who switched temperature off meanwhile found it on again.
  const { db, uri } = await freshMongo(t);
  const accounts = Array.from({ length: 400 }, () => uniqueName('acct'));
  await db.collection(COLLECTIONS.preferences).insertMany(
    accounts.map((accountName) => ({ _id: new ObjectId(), accountName, domainName: 'acme', preferences: [on('temperature')], createdAt: '2024-03-01T00:00:00.000Z' })),
  );
  const [starting, serving] = [await replica(t, uri, db), await replica(t, uri, db)];
  await starting.backfillDerivedFields();
  const migration = migrateAlertableMetrics(starting, logger);
  // Users switch temperature off through the serving replica, several requests at once.
  const lanes = 8;
  const writes = Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      for (let i = lane; i < accounts.length; i += lanes) await serving.setPreferences(accounts[i] as string, 'acme', [off('temperature')]);
    }),
  );
  const [report] = await Promise.all([migration, writes]);
  t.type(report.metrics.peopleCount, 'number', 'the migration ran');
  const docs = await db.collection(COLLECTIONS.preferences).find({}).toArray();
  const prefsOf = (doc: (typeof docs)[number]) => doc.preferences as Array<{ notificationType: string; isSubscribed: boolean }>;
  const revived = docs.filter((doc) => prefsOf(doc).some((p) => p.notificationType === 'temperature' && p.isSubscribed)).map((doc) => doc.accountName as string);
  t.same(revived, [], 'no account has temperature on again');
  const switched = docs.filter((doc) => prefsOf(doc).some((p) => p.notificationType === 'peopleCount')).length;
  t.equal(switched, report.metrics.peopleCount, 'every record the migration counted has its entry');
});
