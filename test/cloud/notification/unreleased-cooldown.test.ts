/**
 * An alert whose publish failed after it armed its cooldown (Redis went away, so nothing could be
 * released either) is delivered when its record is read again once Redis is back: its seen mark is
 * still pending, and this replica forgot the key, so the read asks Redis. Before, the re-read found its
 * own alertId seen and its own cooldown armed, counted it `suppressed`, committed it, and the alert was
 * never delivered. Real Redis: a user that may neither publish nor DEL, as in an outage.
 */
import t from 'tap';
import { RedisCooldown } from '../../../cloud/notification/redis.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { counterValue, startHarness, temperatureAlert } from './support/harness.js';
import { channelRecorder, deleteKeys, freshMongo, redisClient, restrictedRedis, uniqueName, waitFor } from './support/stack.js';

const directory = await startFakeDirectory(t);
const redis = redisClient(t);

t.test('an alert armed but neither published nor released is delivered when read again', async (t) => {
  const keyPrefix = `${uniqueName('notif-test')}:`;
  t.teardown(() => deleteKeys(redis, keyPrefix));
  const { client: restricted, user } = await restrictedRedis(t, redis, [`${keyPrefix}*`]);
  const channel = uniqueName('notifications');
  // Arming works; publishing on the channel and deleting keys are refused.
  await redis.call('ACL', 'SETUSER', user, 'resetchannels', '-del');
  const shared = { db: (await freshMongo(t)).db, channel, keyPrefix };
  const h = await startHarness(t, { directory, shared, publishWith: restricted, cooldown: (_, replicaId) => new RedisCooldown(restricted, { keyPrefix, replicaId }) });
  const recorder = await channelRecorder(t, channel);
  const building = uniqueName('b');
  directory.set(building, [uniqueName('acme')]);
  const records = [{ value: temperatureAlert(uniqueName('alert'), building, 'r1'), offset: '0' }];

  const first = await h.breach.settle(records);
  t.equal(first.settled, 0, 'the publish failed: the record is not settled');
  t.equal(await redis.exists(`${keyPrefix}alert:temperature:temperature:${building}:r1`), 1, 'and its cooldown stays armed');

  // Redis is whole again; the consumer reads the record again.
  await redis.call('ACL', 'SETUSER', user, `&${channel}`, '+del');
  const again = await h.breach.settle(records);
  t.equal(again.settled, 1);
  t.same(again.outcomes, ['delivered'], 'delivered, not suppressed by its own undelivered cooldown');
  await waitFor('the notification', () => recorder.raw.length === 1);
  t.equal(await counterValue(h.metrics, 'notification_alerts_consumed_total', { outcome: 'suppressed' }), 0, 'nothing counted suppressed');

  const third = await h.breach.settle([{ value: temperatureAlert(uniqueName('alert'), building, 'r1'), offset: '1' }]);
  t.same(third.outcomes, ['suppressed'], 'the cooldown it armed on delivery holds for the next alert of the room');
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
