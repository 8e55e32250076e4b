/**
 * Which replica sends an alert's pushes, when a publish call's answer is lost or two replicas read the
 * same record. Real Redis (behind a proxy that loses one reply), web-push-testing as the push service
 * (it decrypts what a browser would read), a fake directory.
 *
 * Before, the published mark did not say who published: a replica whose publish call ran on Redis with
 * its reply lost read the record again, took the alert for a duplicate and never sent its pushes; and a
 * second replica that armed the same record during a rebalance had its publish skipped, counted the
 * alert delivered and pushed it a second time.
 */
import t, { type Test } from 'tap';
import type { AlertKeys, Cooldown } from '../../../cloud/notification/redis.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { call, claims, counterValue, startHarness, temperatureAlert, type Harness } from './support/harness.js';
import { startPushService, type BrowserSubscription } from './support/push-service.js';
import { capturedLogger } from '../../support/captured-logger.js';
import { proxiedClient, startRedisProxy } from './support/redis-proxy.js';
import { channelRecorder, redisClient, uniqueName, waitFor } from './support/stack.js';

const directory = await startFakeDirectory(t);
const push = await startPushService(t);
const redis = redisClient(t);
const source = { topic: 'alerts', partition: 1 };

/** A building of one domain, with one member's phone opted in to every alertable metric there. */
async function subscribedBuilding(t: Test, h: Harness): Promise<{ building: string; domain: string; phone: BrowserSubscription }> {
  const domain = uniqueName('acme');
  const building = uniqueName('b');
  directory.set(building, [domain]);
  const ana = uniqueName('ana');
  const phone = await push.subscribe(h.vapid!.publicKey);
  const subscribed = await call(h.url, 'POST', '/subscribe', { claims: claims(`sub-${ana}`, ana, [{ domainName: domain, role: 'member' }]), body: { subscription: phone, domainName: domain } });
  t.equal(subscribed.status, 201, 'the phone is subscribed');
  return { building, domain, phone };
}

/** The in-app notifications of `channel` so far, once a sentinel published after them arrived. */
async function published(recorder: Awaited<ReturnType<typeof channelRecorder>>, channel: string): Promise<unknown[]> {
  const sentinel = uniqueName('sentinel');
  await redis.publish(channel, JSON.stringify({ sentinel }));
  await waitFor('the sentinel', () => recorder.raw.some((m) => m.includes(sentinel)));
  return recorder.messages.filter((m) => (m as { sentinel?: string }).sentinel === undefined);
}

t.test('the publish ran and its answer was lost: read again, the alert is delivered and pushed once', async (t) => {
  const proxy = await startRedisProxy(t);
  // A publishing client that gives up on a command at once when its connection drops.
  const h = await startHarness(t, { directory, publishWith: proxiedClient(t, proxy.url, { maxRetriesPerRequest: 0 }) });
  const recorder = await channelRecorder(t, h.channel);
  const { building, domain, phone } = await subscribedBuilding(t, h);
  // One alert through the proxy first, so that Redis knows the publish script and the lost reply is
  // the script's own, not a request to send it.
  const warmUp = await h.breach.settle([{ value: temperatureAlert(uniqueName('alert'), building, 'r0'), offset: '0' }], source);
  t.same(warmUp.outcomes, ['delivered']);

  const alertId = uniqueName('alert');
  const records = [{ value: temperatureAlert(alertId, building, 'r1'), offset: '1' }];
  proxy.loseReplyTo(domain);
  const first = await h.breach.settle(records, source);
  t.equal(proxy.lostReplies, 1, 'Redis ran the publish and its reply was lost');
  t.equal(first.settled, 0, 'no answer: the record is not settled');
  t.match(await redis.get(`${h.keyPrefix}alert-seen:${alertId}`), /^[^:]+:1:[^.]+\.[^.]+$/, 'Redis marked the alert published');

  const again = await h.breach.settle(records, source);
  t.same(again.outcomes, ['delivered'], 'read again, it is delivered, not taken for a duplicate of itself');
  await h.delivery.drain();
  const rooms = (await push.messages(phone.clientHash)).map((m) => (JSON.parse(m) as { roomId: string }).roomId);
  t.same(rooms, ['r0', 'r1'], 'the phone got the pushes of both alerts, once each');
  const inApp = (await published(recorder, h.channel)).map((m) => (m as { roomId: string }).roomId);
  t.same(inApp, ['r0', 'r1'], 'and each in-app notification went out once');

  const third = await h.breach.settle(records, source);
  t.same(third.outcomes, ['suppressed'], 'read once more (a lost commit), it is a duplicate');
  await h.delivery.drain();
  t.equal((await push.messages(phone.clientHash)).length, 2, 'and pushes nothing more');
  t.equal(await counterValue(h.metrics, 'notification_alerts_consumed_total', { outcome: 'delivered' }), 2, 'two alerts counted delivered');
  t.equal(await counterValue(h.metrics, 'notification_inapp_published_total', { kind: 'alert' }), 2, 'and two in-app notifications counted published');
});

t.test('an unroutable alert whose publish answer was lost: read again, it is counted unroutable and logged at error', async (t) => {
  const proxy = await startRedisProxy(t);
  const { logger, lines } = capturedLogger('notification-test');
  const h = await startHarness(t, { directory, logger, publishWith: proxiedClient(t, proxy.url, { maxRetriesPerRequest: 0 }) });
  const recorder = await channelRecorder(t, h.channel);
  const building = uniqueName('b');
  directory.set(building, []);
  const warmUp = await h.breach.settle([{ value: temperatureAlert(uniqueName('alert'), building, 'r0'), offset: '0' }], source);
  t.same(warmUp.outcomes, ['unroutable']);

  const records = [{ value: temperatureAlert(uniqueName('alert'), building, 'r1'), offset: '1' }];
  // Only the publish holds the notification's text.
  proxy.loseReplyTo(`exceeded in room r1 of building ${building}`);
  t.equal((await h.breach.settle(records, source)).settled, 0, 'no answer: the record is not settled');
  t.equal(proxy.lostReplies, 1, 'Redis ran the publish and its reply was lost');
  t.same((await h.breach.settle(records, source)).outcomes, ['unroutable'], 'read again, it is unroutable');
  const unroutable = lines.filter((line) => line.msg === 'alert unroutable: building domains unknown; published unscoped, no push');
  t.same(
    unroutable.map((line) => [line.level, line.roomId ?? (line as { offset?: string }).offset]),
    [
      [50, '0'],
      [50, '1'],
    ],
    'each alert logged at error once, the second when it was known to have gone out',
  );
  t.equal(await counterValue(h.metrics, 'notification_alerts_consumed_total', { outcome: 'unroutable' }), 2);
  t.equal(await counterValue(h.metrics, 'notification_inapp_published_total', { kind: 'alert' }), 2, 'both unscoped notifications counted published');
  t.same((await published(recorder, h.channel)).map((m) => (m as { roomId: string }).roomId), ['r0', 'r1'], 'each published once');
});

t.test('two replicas arm the same record during a rebalance: one publishes and pushes, the other neither', async (t) => {
  // Replica A arms the record, then waits until B has delivered it: B read the same record after the
  // partition moved, while A's slice was still in flight.
  let armedOnA!: () => void;
  const aArmed = new Promise<void>((resolve) => (armedOnA = resolve));
  let letAPublish!: () => void;
  const aMayPublish = new Promise<void>((resolve) => (letAPublish = resolve));
  const held = (real: Cooldown): Cooldown => ({
    ...real,
    armedHere: (key, now) => real.armedHere(key, now),
    forgetArmed: (key) => real.forgetArmed(key),
    suppressedHere: undefined,
    armAll: async (alerts: readonly AlertKeys[]) => {
      const armed = await real.armAll(alerts);
      armedOnA();
      await aMayPublish;
      return armed;
    },
  });
  const a = await startHarness(t, { directory, cooldown: held });
  const shared = { db: a.db, channel: a.channel, keyPrefix: a.keyPrefix };
  const b = await startHarness(t, { directory, vapid: a.vapid, shared });
  const recorder = await channelRecorder(t, a.channel);
  const { building, phone } = await subscribedBuilding(t, a);
  const records = [{ value: temperatureAlert(uniqueName('alert'), building, 'r1'), offset: '5' }];

  const onA = a.breach.settle(records, source);
  await aArmed;
  const onB = await b.breach.settle(records, source);
  t.same(onB.outcomes, ['delivered'], 'B is answered armed for the same record and delivers it');
  await b.delivery.drain();
  letAPublish();
  t.same((await onA).outcomes, ['suppressed'], 'A finds it published by B: a duplicate, not a delivery');
  await a.delivery.drain();

  t.equal((await push.messages(phone.clientHash)).length, 1, 'the phone got one push');
  t.equal((await published(recorder, a.channel)).length, 1, 'one in-app notification');
  t.equal(await counterValue(a.metrics, 'notification_alerts_consumed_total', { outcome: 'delivered' }), 0, 'A counted no delivery');
  t.equal(await counterValue(a.metrics, 'notification_inapp_published_total', { kind: 'alert' }), 0, 'nor a publish');
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
