/**
 * A Redis that stays connected but stops answering (a network that drops packets, no reset): the
 * service's calls fail within their timeout instead of waiting until TCP gives up, about 15 minutes,
 * while the consumer's heartbeat kept the partitions and /trigger hung. A failed call takes the path of
 * a dropped connection: the records are not settled nor committed, and are delivered once when Redis
 * answers again, on a new connection. A call given up on is never sent later. Real Redis behind a proxy
 * that goes silent; the client has the service's own options.
 */
import { Redis } from 'ioredis';
import t from 'tap';
import { SERVICE_REDIS_OPTIONS } from '../../../cloud/notification/redis.js';
import { capturedLogger } from '../../support/captured-logger.js';
import { startServiceProcess } from '../../support/service-process.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { call, counterValue, member, newVapid, startHarness, temperatureAlert } from './support/harness.js';
import { startRedisProxy } from './support/redis-proxy.js';
import { serviceEnv } from './support/service-env.js';
import { channelRecorder, freshMongo, freshTopic, producer, redisClient, uniqueName, waitFor, type Teardown } from './support/stack.js';

const directory = await startFakeDirectory(t);
const redis = redisClient(t);

/** A client with the service's options, connected (it queues nothing before), closed at teardown. */
async function serviceClient(t: Teardown, url: string): Promise<Redis> {
  const client = new Redis(url, { ...SERVICE_REDIS_OPTIONS, lazyConnect: true });
  // Its connection errors while the proxy is silent are expected.
  client.on('error', () => undefined);
  t.teardown(() => client.disconnect());
  await client.connect();
  return client;
}

/** The messages of the channel about `buildingId`, once a sentinel published after them came through. */
async function messagesAbout(recorder: { messages: unknown[]; raw: string[] }, channel: string, buildingId: string): Promise<Array<{ title: string }>> {
  const sentinel = uniqueName('sentinel');
  await redis.publish(channel, JSON.stringify({ sentinel }));
  await waitFor('the sentinel', () => recorder.raw.some((m) => m.includes(sentinel)));
  return recorder.messages.filter((m) => (m as { buildingId?: string }).buildingId === buildingId) as Array<{ title: string }>;
}

t.test('the cooldown call of a slice gets no answer: the slice fails, nothing is committed, and the alert is delivered once when Redis answers again', async (t) => {
  const proxy = await startRedisProxy(t);
  const { logger, lines } = capturedLogger('notification-test');
  const h = await startHarness(t, { directory, redis: await serviceClient(t, proxy.url), logger });
  const recorder = await channelRecorder(t, h.channel);
  const building = uniqueName('b');
  directory.set(building, [`${building}-d`]);
  const { topic, admin } = await freshTopic(t, 'silent-redis', 1);
  const groupId = uniqueName('silent-redis');
  const committed = async () => (await admin.fetchOffsets({ groupId, topics: [topic] }))[0]?.partitions[0]?.offset;
  await h.consumer({ topic, groupId, partitionsConsumedConcurrently: 1 });
  const alerts = await producer(t);

  proxy.silence();
  await alerts.send({ topic, messages: [{ value: temperatureAlert(uniqueName('alert'), building, 'r1') }] });
  await waitFor('the slice to fail', () => lines.some((l) => l.msg === 'alert record could not be settled; it will be read again'));
  t.equal(await committed(), '-1', 'the slice failed, and its offset is not committed');

  proxy.restore();
  await waitFor('the record to be committed', async () => (await committed()) === '1', 30_000);
  t.equal((await messagesAbout(recorder, h.channel, building)).length, 1, 'the alert was delivered once');
  t.equal(await counterValue(h.metrics, 'notification_alerts_consumed_total', { outcome: 'delivered' }), 1, 'and counted once');
});

t.test('the publish call gets no answer: the alert stays unsettled and is delivered once when read again', async (t) => {
  const proxy = await startRedisProxy(t);
  const h = await startHarness(t, { directory, redis: await serviceClient(t, proxy.url) });
  const recorder = await channelRecorder(t, h.channel);
  const building = uniqueName('b');
  directory.set(building, [`${building}-d`]);
  const records = [{ value: temperatureAlert(uniqueName('alert'), building, 'r1'), offset: '0' }];
  const source = { topic: 'alerts', partition: 0 };

  // The publish call names the channel; the arming call before it does not, and is answered.
  proxy.silence(h.channel);
  const first = await h.breach.settle(records, source);
  t.ok(proxy.silent, 'Redis went silent at the publish call');
  t.same({ settled: first.settled, outcomes: first.outcomes }, { settled: 0, outcomes: [undefined] }, 'the alert is not settled');
  t.match(String(first.error), /timed out/, 'the publish call timed out');

  proxy.restore();
  // The consumer reads the record again until it settles; calls fail at once until a connection opens.
  const again = await waitFor('a read that settles the record', async () => {
    const settlement = await h.breach.settle(records, source);
    return settlement.settled === 1 && settlement;
  });
  t.same(again.outcomes, ['delivered'], 'it is delivered when read again');
  t.equal((await messagesAbout(recorder, h.channel, building)).length, 1, 'once');
  await h.delivery.drain();
});

t.test('a /trigger whose publish gets no answer answers 500, and is not published later', async (t) => {
  const proxy = await startRedisProxy(t);
  const h = await startHarness(t, { directory, redis: await serviceClient(t, proxy.url) });
  const recorder = await channelRecorder(t, h.channel);
  const domain = uniqueName('d');
  const building = uniqueName('b');
  directory.set(building, [domain]);
  const { header } = member(domain);
  const trigger = (title: string) => call(h.url, 'POST', '/trigger', { claims: header, body: { buildingId: building, title } });

  proxy.silence();
  t.equal((await trigger('while silent')).status, 500, 'the silent publish fails');
  t.equal((await trigger('while reconnecting')).status, 500, 'and so does the next, while no connection answers');

  proxy.restore();
  let attempt = 0;
  await waitFor('a /trigger published on a new connection', async () => (await trigger(`after ${++attempt}`)).status === 200);
  const titles = (await messagesAbout(recorder, h.channel, building)).map((m) => m.title);
  t.same(titles, [`after ${attempt}`], 'only the answered /trigger was published: the failed ones were not sent again');
});

t.test('npm run notification with Redis gone silent: /trigger answers 500, works again once Redis answers, and SIGTERM stops it', async (t) => {
  const proxy = await startRedisProxy(t);
  const { uri } = await freshMongo(t);
  const { topic } = await freshTopic(t, 'silent-redis-process', 1);
  const channel = uniqueName('notifications');
  const domain = uniqueName('d');
  const building = uniqueName('b');
  directory.set(building, [domain]);
  const vapid = newVapid();
  const service = await startServiceProcess(t, {
    name: 'notification',
    script: 'cloud/notification/main.ts',
    env: {
      ...serviceEnv({ mongoUri: uri, directoryUrl: directory.url, vapid, redisUrl: proxy.url }),
      NOTIFICATIONS_CHANNEL: channel,
      ALERTS_TOPIC: topic,
      ALERTS_GROUP: uniqueName('silent-redis-process'),
    },
    listening: 'notification service listening',
  });
  const { header } = member(domain);
  const trigger = () => call(service.url, 'POST', '/trigger', { claims: header, body: { buildingId: building } });

  proxy.silence();
  t.equal((await trigger()).status, 500, 'the silent publish fails');
  proxy.restore();
  await waitFor('a /trigger answered on a new connection', async () => (await trigger()).status === 200);

  service.child.kill('SIGTERM');
  t.match(await service.exited, { code: 0 }, 'it stops cleanly');
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
