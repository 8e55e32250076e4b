/**
 * A slice whose settled prefix stops at a failed record, with an alert delivered after it: that record
 * is read again (its offset cannot be committed past the failure), and is then counted `delivered`,
 * once, not `suppressed` as a duplicate of its own delivery. Real Redis: a user that may not mark one
 * alertId seen makes the second arming round of the slice fail after the first delivered.
 */
import t from 'tap';
import { RedisCooldown } from '../../../cloud/notification/redis.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { counterValue, startHarness, temperatureAlert } from './support/harness.js';
import { channelRecorder, deleteKeys, freshMongo, redisClient, restrictedRedis, uniqueName, waitFor } from './support/stack.js';

const directory = await startFakeDirectory(t);
const redis = redisClient(t);

t.test('an alert delivered after a record that could not be settled is counted delivered when it is settled', async (t) => {
  const keyPrefix = `${uniqueName('notif-test')}:`;
  t.teardown(() => deleteKeys(redis, keyPrefix));
  // May arm any cooldown, and mark seen only alertIds starting with `ok-`.
  const { client: restricted, user } = await restrictedRedis(t, redis, [`${keyPrefix}alert-seen:ok-*`, `${keyPrefix}alert:*`]);
  const shared = { db: (await freshMongo(t)).db, channel: uniqueName('notifications'), keyPrefix };
  const h = await startHarness(t, { directory, shared, cooldown: (_, replicaId) => new RedisCooldown(restricted, { keyPrefix, replicaId }) });
  const channel = await channelRecorder(t, h.channel);
  const building = uniqueName('b');
  directory.set(building, [uniqueName('acme')]);

  // A resend (its alertId already seen) ahead of a new alert of the same room: the new one asks in a
  // second round, which Redis refuses. The alert of another room, after both, armed in the first round.
  const resent = `ok-${uniqueName('alert')}`;
  await redis.set(`${keyPrefix}alert-seen:${resent}`, '1', 'EX', 3600);
  const records = [
    { value: temperatureAlert(resent, building, 'r1'), offset: '0' },
    { value: temperatureAlert(uniqueName('refused'), building, 'r1'), offset: '1' },
    { value: temperatureAlert(`ok-${uniqueName('alert')}`, building, 'r2'), offset: '2' },
  ];
  const first = await h.breach.settle(records);
  t.equal(first.settled, 1, 'only the resend is settled: the refused alert stops the prefix');
  await waitFor('the r2 notification', () => channel.raw.length === 1);
  t.match(JSON.parse(channel.raw[0] as string), { roomId: 'r2' }, 'the alert after the refused one was delivered all the same');

  // Redis recovers; the consumer reads the unsettled records again.
  await redis.call('ACL', 'SETUSER', user, `~${keyPrefix}alert-seen:*`);
  const again = await h.breach.settle(records.slice(1));
  t.equal(again.settled, 2);
  t.same(again.outcomes, ['delivered', 'delivered'], 'the r2 alert is reported as delivered, not as a duplicate of itself');
  await waitFor('the r1 notification', () => channel.raw.length === 2);
  t.equal(channel.raw.length, 2, 'nothing was published twice');
  t.equal(await counterValue(h.metrics, 'notification_alerts_consumed_total', { outcome: 'delivered' }), 2, 'both delivered alerts counted delivered');
  t.equal(await counterValue(h.metrics, 'notification_alerts_consumed_total', { outcome: 'suppressed' }), 1, 'only the resend counted suppressed');

  // A third read of the same records (a redelivery after the commit was lost) finds true duplicates.
  const third = await h.breach.settle(records.slice(2));
  t.same(third.outcomes, ['suppressed'], 'a later redelivery of a counted record is a duplicate again');
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
