/**
 * An alert armed by one replica and never published is delivered, once, by the replica that reads its
 * record next. Before, what was owed lived in the first replica's memory (the release it still had to
 * make, or the token of a lost arming reply): a second replica (after a rebalance, or the same process
 * restarted) found the first one's seen mark, took the alert for a duplicate, committed it, and the
 * alert was never delivered while its cooldown stayed armed. Real Redis: a user that may neither
 * publish nor DEL fails both as an outage would, and a proxy loses an arming reply.
 */
import t from 'tap';
import { RedisCooldown } from '../../../cloud/notification/redis.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { counterValue, startHarness, temperatureAlert } from './support/harness.js';
import { proxiedClient, startRedisProxy } from './support/redis-proxy.js';
import { channelRecorder, deleteKeys, freshMongo, redisClient, restrictedRedis, uniqueName, waitFor, type Teardown } from './support/stack.js';

const directory = await startFakeDirectory(t);
const redis = redisClient(t);
const source = { topic: 'alerts', partition: 2 };

async function sharedState(t: Teardown) {
  const keyPrefix = `${uniqueName('notif-test')}:`;
  t.teardown(() => deleteKeys(redis, keyPrefix));
  const shared = { db: (await freshMongo(t)).db, channel: uniqueName('notifications'), keyPrefix };
  const recorder = await channelRecorder(t, shared.channel);
  const building = uniqueName('b');
  directory.set(building, [uniqueName('acme')]);
  return { shared, recorder, building, keyPrefix };
}

t.test('replica A armed an alert, could neither publish nor release it, and went away: replica B delivers it once', async (t) => {
  const { shared, recorder, building, keyPrefix } = await sharedState(t);
  // A's Redis user arms, but publishing on the channel and deleting keys are refused.
  const { client: crippled, user } = await restrictedRedis(t, redis, [`${keyPrefix}*`]);
  await redis.call('ACL', 'SETUSER', user, 'resetchannels', '-del');
  const a = await startHarness(t, { directory, shared, publishWith: crippled, cooldown: (_, replicaId) => new RedisCooldown(crippled, { keyPrefix, replicaId }) });
  const b = await startHarness(t, { directory, shared });
  const records = [{ value: temperatureAlert(uniqueName('alert'), building, 'r1'), offset: '41' }];

  const onA = await a.breach.settle(records, source);
  t.equal(onA.settled, 0, 'A could not publish: the record is not settled');
  t.equal(await redis.exists(`${keyPrefix}alert:temperature:temperature:${building}:r1`), 1, 'and the cooldown A armed is still there');

  // A is gone; the partition moved to B, which reads the record again.
  const onB = await b.breach.settle(records, source);
  t.same(onB.outcomes, ['delivered'], 'B delivers it, not taking it for a duplicate of A\'s arming');
  await waitFor('the notification', () => recorder.raw.length === 1);
  t.equal(await counterValue(b.metrics, 'notification_alerts_consumed_total', { outcome: 'suppressed' }), 0, 'B counted nothing suppressed');

  const again = await b.breach.settle(records, source);
  t.same(again.outcomes, ['suppressed'], 'read once more (a lost commit), it is a duplicate');
  const sentinel = uniqueName('sentinel');
  await redis.publish(shared.channel, JSON.stringify({ sentinel }));
  await waitFor('the sentinel', () => recorder.raw.some((m) => m.includes(sentinel)));
  t.equal(recorder.raw.length, 2, 'the alert was published exactly once (then the sentinel)');
});

t.test('replica A lost the reply to its arming: replica B reading the record delivers it once', async (t) => {
  const { shared, recorder, building } = await sharedState(t);
  const proxy = await startRedisProxy(t);
  // A client that gives up on a command at once when its connection drops.
  const proxied = proxiedClient(t, proxy.url, { maxRetriesPerRequest: 0 });
  const a = await startHarness(t, { directory, shared, cooldown: (_, replicaId) => new RedisCooldown(proxied, { keyPrefix: shared.keyPrefix, replicaId }) });
  const b = await startHarness(t, { directory, shared });
  const alertId = uniqueName('alert');
  const records = [{ value: temperatureAlert(alertId, building, 'r1'), offset: '7' }];

  proxy.loseReplyTo(alertId);
  const onA = await a.breach.settle(records, source);
  t.equal(proxy.lostReplies, 1, 'Redis ran A\'s arming and its reply was lost');
  t.equal(onA.settled, 0, 'no answer: the record is not settled');

  const onB = await b.breach.settle(records, source);
  t.same(onB.outcomes, ['delivered'], 'B delivers it');
  await waitFor('the notification', () => recorder.raw.length === 1);
  const again = await b.breach.settle(records, source);
  t.same(again.outcomes, ['suppressed'], 'a redelivery after that is a duplicate');
});

t.test('while an alert is armed and unpublished, another record of its alertId stays a duplicate; its own record delivers it', async (t) => {
  const { shared, recorder, building, keyPrefix } = await sharedState(t);
  const { client: crippled, user } = await restrictedRedis(t, redis, [`${keyPrefix}*`]);
  await redis.call('ACL', 'SETUSER', user, 'resetchannels');
  const a = await startHarness(t, { directory, shared, publishWith: crippled, cooldown: (_, replicaId) => new RedisCooldown(crippled, { keyPrefix, replicaId }) });
  const b = await startHarness(t, { directory, shared });
  const value = temperatureAlert(uniqueName('alert'), building, 'r1');
  const original = [{ value, offset: '3' }];

  t.equal((await a.breach.settle(original, source)).settled, 0, 'A armed it and could not publish');
  // The outbox relay's resend of the same alertId, on another partition, read by B meanwhile.
  const copy = await b.breach.settle([{ value, offset: '9' }], { ...source, partition: 3 });
  t.same(copy.outcomes, ['suppressed'], 'the resend is a duplicate: the original record is still to be read again');
  t.same((await b.breach.settle(original, source)).outcomes, ['delivered'], 'the original record, read again, delivers it');
  const sentinel = uniqueName('sentinel');
  await redis.publish(shared.channel, JSON.stringify({ sentinel }));
  await waitFor('the sentinel', () => recorder.raw.some((m) => m.includes(sentinel)));
  t.equal(recorder.raw.length, 2, 'the alert was published exactly once (then the sentinel)');
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
