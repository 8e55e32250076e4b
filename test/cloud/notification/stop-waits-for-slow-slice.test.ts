/**
 * SIGTERM while a slice outlives the alert consumer's 2 s stop: the slice hands its push fan-outs over
 * only once all of it is published, so the stop waits for it (as long as for push fan-outs) before it
 * drains them and closes the push sender. An alert the slice already published gets its push; read
 * again it would be a duplicate, and the push would be lost for good.
 *
 * The slice is held deterministically past the consumer stop: the building lookup of its last alert
 * hangs until its 2 s timeout, and Redis, reached through a proxy, then holds back the reply to that
 * alert's publish until the service logs that the consumer did not stop in time. (A held Redis reply
 * alone no longer holds a slice that long: the client gives up on a call after 2 s.)
 */
import t from 'tap';
import webpush from 'web-push';
import { startServiceProcess } from '../../support/service-process.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { startFakePushHost } from './support/fake-push-host.js';
import { browserKeys, call, member } from './support/harness.js';
import { startRedisProxy } from './support/redis-proxy.js';
import { channelRecorder, freshMongo, freshTopic, producer, uniqueName, waitFor, type Teardown } from './support/stack.js';
import { serviceEnv } from './support/service-env.js';
import { ALERTS_PER_CALL } from '../../../cloud/notification/redis.js';

/** In the in-app message of the second arming call's alert only, never in a key: the proxy's marker. */
const LATE_VALUE = 7777777;

/** The service as its own process, as `npm run notification` starts it. */
function startService(t: Teardown, env: Record<string, string>) {
  return startServiceProcess(t, { name: 'notification', script: 'cloud/notification/main.ts', env, listening: 'notification service listening' });
}

t.test('SIGTERM while a slice outlives the consumer stop: the pushes of the alerts it already published are sent', async (t) => {
  const keys = webpush.generateVAPIDKeys();
  const host = await startFakePushHost(t, { vapidPublicKey: keys.publicKey });
  const directory = await startFakeDirectory(t);
  const proxy = await startRedisProxy(t);
  const { uri } = await freshMongo(t);
  const { topic, admin } = await freshTopic(t, 'alerts', 1);
  const groupId = uniqueName('alerts');
  const channelName = uniqueName('notifications');
  const channel = await channelRecorder(t, channelName);
  const service = await startService(t, {
    ...serviceEnv({ mongoUri: uri, directoryUrl: directory.url, vapid: keys, redisUrl: proxy.url }),
    NOTIFICATIONS_CHANNEL: channelName,
    ALERTS_TOPIC: topic,
    ALERTS_GROUP: groupId,
  });
  // One alert with a subscribed device; the others go to a domain nobody subscribed in.
  const acme = uniqueName('acme');
  const quiet = uniqueName('quiet');
  const watched = uniqueName('b-watched');
  const filler = uniqueName('b-filler');
  const late = uniqueName('b-late');
  directory.set(watched, [acme]).set(filler, [quiet]).set(late, 'hang');
  const { header } = member(acme, 'ana');
  const subscribed = await call(service.url, 'POST', '/subscribe', {
    claims: header,
    body: { subscription: { endpoint: host.subscribe('/push/device', 201), keys: browserKeys() }, domainName: acme },
  });
  t.equal(subscribed.status, 201);
  await waitFor('the consumer to run', () => service.logs.some((l) => l.msg === 'alert consumer running'), 30_000);

  // One slice of two arming calls: the first (ALERTS_PER_CALL distinct keys, the watched alert first)
  // publishes; the second's lookup hangs, then its publish is held by the proxy, so the slice does not end.
  const alert = (buildingId: string, roomId: string, value: number) =>
    JSON.stringify({ alertId: uniqueName('alert'), type: 'airQuality', field: 'co2', buildingId, roomId, value, bound: 'maxCo2', threshold: 1200 });
  const messages = [{ key: `${watched}:r0`, value: alert(watched, 'r0', 1800) }];
  for (let i = 1; i < ALERTS_PER_CALL; i++) messages.push({ key: `${filler}:r${i}`, value: alert(filler, `r${i}`, 1800) });
  messages.push({ key: `${late}:r0`, value: alert(late, 'r0', LATE_VALUE) });
  proxy.holdRepliesAfter(`${LATE_VALUE} ppm`);
  const p = await producer(t);
  await p.send({ topic, messages });
  await waitFor('the second lookup to hang', () => directory.callsFor(late) === 1, 30_000);
  await waitFor(
    'the watched alert to be published (its seen mark set published) before the signal',
    () => channel.messages.some((m) => (m as { buildingId?: string; domainName?: string }).buildingId === watched && (m as { domainName?: string }).domainName === acme),
  );
  t.same(host.calls, [], 'its push waits for the slice to end');

  service.child.kill('SIGTERM');
  await waitFor('the consumer stop to run out', () => service.logs.some((l) => /^the alert consumer did not stop in time/.test(String(l.msg))), 30_000);
  await waitFor('the second publish to be held', () => proxy.holding);
  proxy.releaseReplies();
  const { code } = await service.exited;
  if (code !== 0) t.comment(JSON.stringify(service.logs.slice(-8)));
  t.equal(code, 0, 'SIGTERM stops it cleanly');
  t.same(host.calls, ['/push/device'], 'the device got the push of the alert published before the signal');
  t.same(service.logs.filter((l) => /push failed/.test(String(l.msg))), [], 'no push failed');
  t.notOk(service.logs.some((l) => /push fan-outs still running/.test(String(l.msg))), 'nothing was left to drop');
  const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
  t.same(committed?.partitions.map((c) => c.offset), [String(messages.length)], 'the slice was committed: none of it is read again');
});
