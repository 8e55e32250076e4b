/**
 * Arming a slice's alerts on a real Redis: a duplicate alertId leaves its cooldown key untouched, so a
 * new alert of the same key later in the slice is still delivered; when one of a slice's script calls
 * fails after an earlier one succeeded, the alerts the earlier call armed (and marked seen) are
 * delivered rather than read again as duplicates and lost; the alerts of a call are looked up and
 * published while the next call arms, and the notifications still go out in record order.
 */
import t from 'tap';
import { RedisCooldown, type AlertKeys, type Cooldown } from '../../../cloud/notification/redis.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { startHarness } from './support/harness.js';
import { channelRecorder, deleteKeys, freshMongo, redisClient, restrictedRedis, uniqueName, waitFor } from './support/stack.js';

const directory = await startFakeDirectory(t);
const redis = redisClient(t);

function alert(buildingId: string, roomId: string, extra: Record<string, unknown> = {}): Buffer {
  return Buffer.from(JSON.stringify({ alertId: uniqueName('alert'), type: 'temperature', field: 'temperature', buildingId, roomId, value: 31, bound: 'maxTemperature', threshold: 28, ...extra }));
}

t.test('a resent alertId ahead of a new alert of the same key, in one slice, does not suppress the new one', async (t) => {
  const h = await startHarness(t, { directory });
  const channel = await channelRecorder(t, h.channel);
  const building = uniqueName('b');
  directory.set(building, [uniqueName('acme')]);
  // Two resent alerts, delivered more than 300 s ago: their alertIds are seen, the cooldown has expired.
  const resent = [uniqueName('alert'), uniqueName('alert')];
  for (const alertId of resent) await redis.set(`${h.keyPrefix}alert-seen:${alertId}`, '1', 'EX', 3600);
  const settled = await h.breach.settle([
    { value: alert(building, 'r1', { alertId: resent[0] }) },
    { value: alert(building, 'r1', { alertId: resent[1] }) },
    { value: alert(building, 'r1') },
    { value: alert(building, 'r1') },
  ]);
  t.same(settled.outcomes, ['suppressed', 'suppressed', 'delivered', 'suppressed'], 'the resends are duplicates; the first new alert finds the key free, the next one finds it armed');
  t.equal(await redis.exists(`${h.keyPrefix}alert:temperature:temperature:${building}:r1`), 1, 'the new alert armed the cooldown');
  await waitFor('the notification', () => channel.raw.length === 1);
});

t.test('a slice arming in several script calls: when a later call fails, the alerts the earlier calls armed are delivered, not lost', async (t) => {
  // A real Redis user that may not touch the cooldown keys of one building: the script call holding
  // that building's alert is refused (NOPERM), as a call cut by a failover would fail.
  const allowed = uniqueName('b-ok');
  const refused = uniqueName('b-refused');
  const keyPrefix = `${uniqueName('notif-test')}:`;
  t.teardown(() => deleteKeys(redis, keyPrefix));
  const { client: restricted } = await restrictedRedis(t, redis, [`${keyPrefix}alert-seen:*`, `${keyPrefix}alert:temperature:temperature:${allowed}:*`]);
  const shared = { db: (await freshMongo(t)).db, channel: uniqueName('notifications'), keyPrefix };
  const h = await startHarness(t, { directory, shared, cooldown: (_, replicaId) => new RedisCooldown(restricted, { keyPrefix, replicaId }) });
  const channel = await channelRecorder(t, h.channel);
  directory.set(allowed, [uniqueName('acme')]);
  const records = Array.from({ length: 500 }, (_, i) => ({ value: alert(allowed, `r${i}`) }));
  records.push({ value: alert(refused, 'r1') });

  const first = await h.breach.settle(records);
  t.equal(first.settled, 500, 'the 500 alerts of the first call are settled; the refused one is not');
  t.ok(first.outcomes.slice(0, 500).every((o) => o === 'delivered'), 'and delivered');
  t.equal(first.outcomes[500], undefined);
  await waitFor('500 notifications', () => channel.raw.length === 500);
  // The consumer reads the unsettled record again; the settled ones are committed and never come back.
  const again = await h.breach.settle(records.slice(500));
  t.equal(again.settled, 0, 'the refused alert is still unsettled, so it is read again later');
});

t.test('the first call\'s alerts are looked up before the next call arms; notifications keep record order', async (t) => {
  const building = uniqueName('b');
  directory.set(building, [uniqueName('acme')]);
  // The second arming call waits (at most 10 s) for the directory to have been asked: a delivery that
  // started only once every call had armed would not have asked it yet.
  const calls: Array<{ alerts: number; directoryAskedBefore: boolean }> = [];
  const gated = (real: Cooldown): Cooldown => ({
    armedHere: (key, now) => real.armedHere(key, now),
    forgetArmed: (key) => real.forgetArmed(key),
    suppressedHere: real.suppressedHere?.bind(real),
    armAll: async (alerts: readonly AlertKeys[]) => {
      if (calls.length > 0) await waitFor('the lookup', () => directory.callsFor(building) > 0, 10_000).catch(() => undefined);
      calls.push({ alerts: alerts.length, directoryAskedBefore: directory.callsFor(building) > 0 });
      return real.armAll(alerts);
    },
  });
  const h = await startHarness(t, { directory, cooldown: gated });
  const channel = await channelRecorder(t, h.channel);
  const values = Array.from({ length: 700 }, (_, i) => alert(building, `r${i}`));
  const settled = await h.breach.settle(values.map((value) => ({ value })));
  t.equal(settled.settled, 700, 'every alert settled');
  t.ok(settled.outcomes.every((o) => o === 'delivered'), 'and delivered');
  t.same(calls, [{ alerts: 500, directoryAskedBefore: false }, { alerts: 200, directoryAskedBefore: true }], 'two calls; the building was asked for before the second one armed');
  await waitFor('700 notifications', () => channel.raw.length === 700);
  const published = channel.raw.map((m) => (JSON.parse(m) as { roomId?: string }).roomId);
  t.same(published, values.map((_, i) => `r${i}`), 'published in record order');
  t.equal(directory.callsFor(building), 1, 'looked up once');
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
