/**
 * The publish call and the seen mark of its alert, on a real Redis. An alert's mark is set published
 * before its first message goes out, in the same script call: a Redis that refuses writes (out of
 * memory, read-only, a failing save; here an ACL that denies SET) fails the call before anything of it
 * is published, so reading the record again cannot publish it twice. And an alert already marked
 * published is not published again: the client resending the very call after a lost reply, or a second
 * replica that read the same record, publishes nothing more.
 */
import t, { type Test } from 'tap';
import { RedisCooldown, RedisPublisher } from '../../../cloud/notification/redis.js';
import type { Notification } from '../../../shared/notification.js';
import { channelRecorder, deleteKeys, redisClient, restrictedRedis, uniqueName, waitFor } from './support/stack.js';

const redis = redisClient(t);

/** One alert armed (its mark pending), three notifications of it, and a recorder on a fresh channel. */
async function armedAlert(t: Test) {
  const keyPrefix = `${uniqueName('notif-test')}:`;
  t.teardown(() => deleteKeys(redis, keyPrefix));
  const channel = uniqueName('notifications');
  const recorder = await channelRecorder(t, channel);
  const keys = { seen: `alert-seen:${uniqueName('alert')}`, cooldown: `alert:temperature:temperature:${uniqueName('b')}:r1`, record: 'alerts/0/7' };
  t.same(await new RedisCooldown(redis, { keyPrefix }).armAll([keys]), ['armed']);
  const notifications = ['acme', 'globex', 'initech'].map((domainName) => ({ id: uniqueName('n'), kind: 'alert', domainName }) as unknown as Notification);
  const alertOf = notifications.map(() => keys.seen);
  /** The notifications received on the channel, once a sentinel published after them arrived. */
  const received = async () => {
    const sentinel = uniqueName('sentinel');
    await redis.publish(channel, JSON.stringify({ sentinel }));
    await waitFor('the sentinel', () => recorder.raw.some((m) => m.includes(sentinel)));
    return recorder.messages.filter((m) => (m as { sentinel?: string }).sentinel === undefined).map((m) => (m as { domainName: string }).domainName);
  };
  return { keyPrefix, channel, keys, notifications, alertOf, received };
}

t.test('a Redis that refuses the mark publishes nothing of the alert, and reports the call failed', async (t) => {
  const { keyPrefix, channel, keys, notifications, alertOf, received } = await armedAlert(t);
  const { client: refusing, user } = await restrictedRedis(t, redis, [`${keyPrefix}*`]);
  await redis.call('ACL', 'SETUSER', user, 'allchannels', '-set');
  const outcomes = await new RedisPublisher(refusing, { channel, keyPrefix }).publishAll(notifications, alertOf);
  t.equal(outcomes.filter((o) => o instanceof Error).length, 3, 'every notification of the call is reported not published');
  t.same(await received(), [], 'none went out');
  t.match(await redis.get(`${keyPrefix}${keys.seen}`), /^[^:]+:P:alerts\/0\/7$/, 'the alert is still pending: read again, it is delivered');
});

t.test('an alert already marked published is not published again by the same call resent', async (t) => {
  const { keyPrefix, channel, keys, notifications, alertOf, received } = await armedAlert(t);
  const publisher = new RedisPublisher(redis, { channel, keyPrefix });
  t.same(await publisher.publishAll(notifications, alertOf), [undefined, undefined, undefined]);
  t.match(await redis.get(`${keyPrefix}${keys.seen}`), /^[^:]+:1$/, 'marked published');
  t.same(await publisher.publishAll(notifications, alertOf), [undefined, undefined, undefined], 'the resend answers published');
  t.same((await received()).sort(), ['acme', 'globex', 'initech'], 'each notification went out once');
});
