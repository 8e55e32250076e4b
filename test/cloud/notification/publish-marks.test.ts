/**
 * The publish call and the seen mark of its alert, on a real Redis. An alert's mark is set published
 * before its first message goes out, in the same script call: a Redis that refuses writes (out of
 * memory, read-only, a failing save; here an ACL that denies SET) fails the call before anything of it
 * is published, so reading the record again cannot publish it twice. And an alert already marked
 * published is not published again: the client resending the very call after a lost reply, or a second
 * replica that read the same record, publishes nothing more; only the resend is answered published.
 */
import t, { type Test } from 'tap';
import { RedisCooldown, RedisPublisher } from '../../../cloud/notification/redis.js';
import type { Notification } from '../../../shared/notification.js';
import { proxiedClient, startRedisProxy } from './support/redis-proxy.js';
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

t.test('an alert already marked published is not published again: another call is answered published elsewhere', async (t) => {
  const { keyPrefix, channel, keys, notifications, alertOf, received } = await armedAlert(t);
  const publisher = new RedisPublisher(redis, { channel, keyPrefix, replicaId: 'replica-a' });
  t.same(await publisher.publishAll(notifications, alertOf), ['published', 'published', 'published']);
  t.match(await redis.get(`${keyPrefix}${keys.seen}`), /^[^:]+:1:replica-a\.[^.]+$/, 'marked published, by this call');
  const other = new RedisPublisher(redis, { channel, keyPrefix, replicaId: 'replica-b' });
  t.same(await other.publishAll(notifications, alertOf), ['elsewhere', 'elsewhere', 'elsewhere'], 'a second replica publishes nothing');
  t.same(await publisher.publishAll(notifications, alertOf), ['elsewhere', 'elsewhere', 'elsewhere'], 'nor does another call of the first');
  t.same((await received()).sort(), ['acme', 'globex', 'initech'], 'each notification went out once');
  t.same(await new RedisCooldown(redis, { keyPrefix, replicaId: 'replica-a' }).armAll([keys]), ['published-here'], 'read again, the replica that published it is told so');
  t.same(await new RedisCooldown(redis, { keyPrefix, replicaId: 'replica-b' }).armAll([keys]), ['duplicate'], 'any other replica finds a duplicate');
});

t.test('the client resends the publish call after a lost reply: answered published, sent once', async (t) => {
  const { keyPrefix, channel, notifications, alertOf, received } = await armedAlert(t);
  const proxy = await startRedisProxy(t);
  // The service's own client options: commands in flight are resent once the connection is back.
  const client = proxiedClient(t, proxy.url);
  const publisher = new RedisPublisher(client, { channel, keyPrefix });
  // Redis knows the script once it ran (on any connection): the lost reply is then the script's own.
  const warmUp = new RedisPublisher(redis, { channel: uniqueName('warm-up'), keyPrefix });
  t.same(await warmUp.publishAll([{ id: uniqueName('n'), kind: 'alert' } as unknown as Notification], ['alert-seen:warm-up']), ['published']);
  proxy.loseReplyTo(notifications[0]!.id);
  t.same(await publisher.publishAll(notifications, alertOf), ['published', 'published', 'published'], 'the resend finds its own mark');
  t.equal(proxy.lostReplies, 1, 'Redis ran the call and its reply was lost');
  t.same((await received()).sort(), ['acme', 'globex', 'initech'], 'each notification went out once');
});

t.test('a mark written before the publisher id is published elsewhere', async (t) => {
  const { keyPrefix, channel, keys, notifications, alertOf, received } = await armedAlert(t);
  const holder = (await redis.get(`${keyPrefix}${keys.seen}`))!.split(':')[0];
  await redis.set(`${keyPrefix}${keys.seen}`, `${holder}:1`, 'KEEPTTL');
  t.same(await new RedisPublisher(redis, { channel, keyPrefix }).publishAll(notifications, alertOf), ['elsewhere', 'elsewhere', 'elsewhere']);
  t.same(await received(), [], 'nothing went out');
});
