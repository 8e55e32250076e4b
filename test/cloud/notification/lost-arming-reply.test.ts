/**
 * An alert whose arming ran on Redis but whose reply was lost with the connection is delivered, not
 * taken for a duplicate of itself. Real Redis behind a proxy that cuts the connection right after
 * Redis ran the script and before its reply reaches the client. Before, the second run of the script
 * (the client's resend on reconnect, or the arming of the record read again) found the alertId marked
 * seen by the first run, counted it `suppressed`, committed it, and the alert was never delivered.
 */
import type { Redis } from 'ioredis';
import t from 'tap';
import { RedisCooldown } from '../../../cloud/notification/redis.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { counterValue, startHarness, temperatureAlert } from './support/harness.js';
import { proxiedClient, startRedisProxy } from './support/redis-proxy.js';
import { channelRecorder, deleteKeys, freshMongo, redisClient, uniqueName, waitFor, type Teardown } from './support/stack.js';

const directory = await startFakeDirectory(t);
const redis = redisClient(t);

async function setUp(t: Teardown, client: (proxyUrl: string) => Redis) {
  const proxy = await startRedisProxy(t);
  const keyPrefix = `${uniqueName('notif-test')}:`;
  t.teardown(() => deleteKeys(redis, keyPrefix));
  const shared = { db: (await freshMongo(t)).db, channel: uniqueName('notifications'), keyPrefix };
  const h = await startHarness(t, { directory, shared, cooldown: (_, replicaId) => new RedisCooldown(client(proxy.url), { keyPrefix, replicaId }) });
  const recorder = await channelRecorder(t, shared.channel);
  const building = uniqueName('b');
  directory.set(building, [uniqueName('acme')]);
  return { proxy, h, recorder, building, keyPrefix };
}

t.test('the client resends the arming after reconnecting: the alert is delivered', async (t) => {
  // The service's own client options: commands in flight are resent once the connection is back.
  const { proxy, h, recorder, building, keyPrefix } = await setUp(t, (url) => proxiedClient(t, url));
  const alertId = uniqueName('alert');
  proxy.loseReplyTo(alertId);
  const settled = await h.breach.settle([{ value: temperatureAlert(alertId, building, 'r1'), offset: '0' }]);
  t.equal(proxy.lostReplies, 1, 'Redis ran the arming and its reply was lost');
  t.same(settled.outcomes, ['delivered'], 'delivered, not suppressed by its own seen mark');
  await waitFor('the notification', () => recorder.raw.length === 1);
  t.equal(await counterValue(h.metrics, 'notification_alerts_consumed_total', { outcome: 'suppressed' }), 0, 'nothing counted suppressed');

  const resend = await h.breach.settle([{ value: temperatureAlert(alertId, building, 'r2'), offset: '1' }]);
  t.same(resend.outcomes, ['suppressed'], 'a later resend of the alertId is still a duplicate');
  t.equal(await redis.exists(`${keyPrefix}alert:temperature:temperature:${building}:r2`), 0, 'and leaves its cooldown untouched');
});

t.test('the arming fails without a reply and the record is read again: the alert is delivered', async (t) => {
  // A client that gives up on a command at once when its connection drops, as the service's does after
  // its reconnection attempts run out.
  const { proxy, h, recorder, building } = await setUp(t, (url) => proxiedClient(t, url, { maxRetriesPerRequest: 0 }));
  const alertId = uniqueName('alert');
  const records = [{ value: temperatureAlert(alertId, building, 'r1'), offset: '0' }];
  proxy.loseReplyTo(alertId);
  const first = await h.breach.settle(records);
  t.equal(proxy.lostReplies, 1, 'Redis ran the arming and its reply was lost');
  t.equal(first.settled, 0, 'no answer: the record is not settled');

  const again = await h.breach.settle(records);
  t.same(again.outcomes, ['delivered'], 'read again, it is delivered, not suppressed by its own seen mark');
  await waitFor('the notification', () => recorder.raw.length === 1);

  const third = await h.breach.settle(records);
  t.same(third.outcomes, ['suppressed'], 'a redelivery after that is a duplicate');
  t.equal(recorder.raw.length, 1, 'published once');
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
