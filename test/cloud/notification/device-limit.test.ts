/**
 * The devices kept per account, on a real FerretDB: past MAX_DEVICES_PER_ACCOUNT a new device deletes
 * the account's least recently subscribed one, so subscribing always succeeds and one account cannot
 * make a fan-out as long as it likes; re-subscribing a device makes it the most recent; other accounts
 * are untouched; concurrent subscribes leave the account within the limit.
 */
import t from 'tap';
import { COLLECTIONS, MAX_DEVICES_PER_ACCOUNT, MongoNotificationStore } from '../../../cloud/notification/store.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { browserKeys, call, member, startHarness } from './support/harness.js';
import { freshMongo, uniqueName, type Teardown } from './support/stack.js';

const keys = browserKeys();
const endpointOf = (account: string, i: number) => `https://push.example.invalid/${account}/${i}`;

/** A store on a fresh database whose clock moves one second each time it is read. */
async function steppingStore(t: Teardown) {
  const { db } = await freshMongo(t);
  let now = Date.parse('2026-01-01T00:00:00.000Z');
  const store = new MongoNotificationStore(db, { recipientsCacheMs: 0, clock: () => (now += 1000) });
  await store.start();
  const endpointsOf = async (accountName: string) =>
    (await db.collection(COLLECTIONS.devices).find({ accountName }, { projection: { _id: 0, endpoint: 1 } }).toArray()).map((d) => d.endpoint as string);
  return { store, endpointsOf };
}

t.test('subscribing one device past the limit deletes the oldest and keeps the newest', async (t) => {
  const { store, endpointsOf } = await steppingStore(t);
  const ana = uniqueName('ana');
  for (let i = 0; i <= MAX_DEVICES_PER_ACCOUNT; i++) t.equal(await store.saveDevice(ana, { endpoint: endpointOf(ana, i), keys }), 'saved');
  const left = await endpointsOf(ana);
  t.equal(left.length, MAX_DEVICES_PER_ACCOUNT, `the account keeps ${MAX_DEVICES_PER_ACCOUNT} devices`);
  t.notOk(left.includes(endpointOf(ana, 0)), 'the least recently subscribed device is gone');
  t.ok(left.includes(endpointOf(ana, 1)), 'the next oldest is kept');
  t.ok(left.includes(endpointOf(ana, MAX_DEVICES_PER_ACCOUNT)), 'the new device is kept');
});

t.test('re-subscribing a device makes it the most recent; other accounts are untouched', async (t) => {
  const { store, endpointsOf } = await steppingStore(t);
  const ana = uniqueName('ana');
  const bob = uniqueName('bob');
  await store.saveDevice(bob, { endpoint: endpointOf(bob, 0), keys });
  for (let i = 0; i < MAX_DEVICES_PER_ACCOUNT; i++) await store.saveDevice(ana, { endpoint: endpointOf(ana, i), keys });
  t.equal(await store.saveDevice(ana, { endpoint: endpointOf(ana, 0), keys }), 'saved', 'the oldest device subscribes again');
  t.equal((await endpointsOf(ana)).length, MAX_DEVICES_PER_ACCOUNT, 're-subscribing a stored device deletes nothing');
  await store.saveDevice(ana, { endpoint: endpointOf(ana, MAX_DEVICES_PER_ACCOUNT), keys });
  const left = await endpointsOf(ana);
  t.equal(left.length, MAX_DEVICES_PER_ACCOUNT);
  t.ok(left.includes(endpointOf(ana, 0)), 'the re-subscribed device is kept');
  t.notOk(left.includes(endpointOf(ana, 1)), 'the least recently subscribed one is deleted instead');
  t.ok(left.includes(endpointOf(ana, MAX_DEVICES_PER_ACCOUNT)), 'the new device is kept');
  t.same(await endpointsOf(bob), [endpointOf(bob, 0)], 'another account’s device is untouched');
});

t.test('concurrent subscribes leave the account within the limit', async (t) => {
  const { store, endpointsOf } = await steppingStore(t);
  const ana = uniqueName('ana');
  const count = MAX_DEVICES_PER_ACCOUNT + 20;
  const saved = await Promise.all(Array.from({ length: count }, (_, i) => store.saveDevice(ana, { endpoint: endpointOf(ana, i), keys })));
  t.ok(saved.every((s) => s === 'saved'), 'every subscribe succeeds');
  const left = await endpointsOf(ana);
  t.ok(left.length <= MAX_DEVICES_PER_ACCOUNT, `at most ${MAX_DEVICES_PER_ACCOUNT} devices left, found ${left.length}`);
});

t.test('through /subscribe: a subscribe past the limit answers 201 and the account keeps the limit', async (t) => {
  const directory = await startFakeDirectory(t);
  const h = await startHarness(t, { directory });
  const ana = member(uniqueName('acme'));
  for (let i = 0; i <= MAX_DEVICES_PER_ACCOUNT; i++) {
    const res = await call(h.url, 'POST', '/subscribe', { claims: ana.header, body: { subscription: { endpoint: endpointOf(ana.account, i), keys } } });
    if (res.status !== 201) t.fail(`subscribe ${i} answered ${res.status}: ${JSON.stringify(res.body)}`);
  }
  const devices = h.db.collection(COLLECTIONS.devices);
  t.equal(await devices.countDocuments({ accountName: ana.account }), MAX_DEVICES_PER_ACCOUNT);
  t.equal(await devices.countDocuments({ endpoint: endpointOf(ana.account, MAX_DEVICES_PER_ACCOUNT) }), 1, 'the newest device is stored');
  t.same(directory.unexpected, []);
});

t.test('a device subscribed again while another subscribe sweeps the account is kept', async (t) => {
  // Two subscribes of one account at once: a new device, whose sweep finds the oldest device past the
  // limit, and that oldest device subscribed again between the sweep's read and its delete.
  const { db } = await freshMongo(t);
  let now = Date.parse('2026-01-01T00:00:00.000Z');
  const clock = () => (now += 1000);
  let betweenReadAndDelete: (() => Promise<unknown>) | undefined;
  const devices = db.collection(COLLECTIONS.devices);
  // The sweeping store's database: its device collection runs the hook before its first delete.
  const watched = new Proxy(db, {
    get(target, property) {
      if (property !== 'collection') return Reflect.get(target, property, target) as unknown;
      return (name: string) =>
        name !== COLLECTIONS.devices
          ? target.collection(name)
          : new Proxy(devices, {
              get(collection, key) {
                if (key === 'deleteMany') {
                  return async (...args: Parameters<typeof devices.deleteMany>) => {
                    const hook = betweenReadAndDelete;
                    betweenReadAndDelete = undefined;
                    await hook?.();
                    return collection.deleteMany(...args);
                  };
                }
                const value = Reflect.get(collection, key, collection) as unknown;
                return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(collection) : value;
              },
            });
    },
  });
  const sweeping = new MongoNotificationStore(watched, { recipientsCacheMs: 0, clock });
  const other = new MongoNotificationStore(db, { recipientsCacheMs: 0, clock });
  await sweeping.start();
  const ana = uniqueName('ana');
  for (let i = 0; i < MAX_DEVICES_PER_ACCOUNT; i++) t.equal(await other.saveDevice(ana, { endpoint: endpointOf(ana, i), keys }), 'saved');
  const oldest = endpointOf(ana, 0);
  betweenReadAndDelete = () => other.saveDevice(ana, { endpoint: oldest, keys });
  t.equal(await sweeping.saveDevice(ana, { endpoint: endpointOf(ana, MAX_DEVICES_PER_ACCOUNT), keys }), 'saved');
  t.equal(betweenReadAndDelete, undefined, 'the device was subscribed again between the sweep\'s read and its delete');
  const left = (await devices.find({ accountName: ana }, { projection: { _id: 0, endpoint: 1 } }).toArray()).map((d) => d.endpoint as string);
  t.ok(left.includes(oldest), 'the device subscribed again is kept');
  t.ok(left.includes(endpointOf(ana, MAX_DEVICES_PER_ACCOUNT)), 'and so is the new one');
  t.equal(left.length, MAX_DEVICES_PER_ACCOUNT, `the account keeps ${MAX_DEVICES_PER_ACCOUNT} devices`);
});
