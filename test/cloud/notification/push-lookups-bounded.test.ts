/**
 * Push hosts whose DNS never answers. dns.lookup runs on libuv's 4 threadpool threads and cannot be
 * cancelled, so each such push would hold a thread for good and, a few pushes later, stall every other
 * lookup of the process. The sender runs at most 2 push lookups at once, one per host: past that, a
 * push waits for a slot at most half its timeout and then fails as a push failure (logged, counted as
 * `timeout`, the subscription kept), while pushes needing no lookup, or finding a slot free, still
 * arrive. A host whose lookup outlived that wait fails its next pushes at once, with no lookup.
 *
 * The push timeout is 4 s, so the 2 s waits for a lookup end well before undici's own connect timeout
 * (the push timeout) would fail the push first.
 *
 * The resolver is injected: names under `.stuck.test` never answer (as a resolver that drops queries),
 * `localhost` goes to the real dns.lookup, and any other name is refused and recorded. The push service
 * is the real web-push-testing; the store, Redis and the delivery are the real ones.
 */
import t, { type Test } from 'tap';
import { ANY_ALERTABLE_METRIC } from '../../../cloud/notification/delivery.js';
import { createMetrics } from '../../../cloud/notification/metrics.js';
import { WebPushSender } from '../../../cloud/notification/push.js';
import { COLLECTIONS } from '../../../cloud/notification/store.js';
import type { Notification } from '../../../shared/notification.js';
import { capturedLogger } from '../../support/captured-logger.js';
import { stuckResolver } from '../../support/stuck-resolver.js';
import { counterValue, newVapid } from './support/harness.js';
import { startPushService, type BrowserSubscription } from './support/push-service.js';
import { startDeliveryOnStack } from './support/delivery-on-stack.js';
import { uniqueName } from './support/stack.js';

const PUSH_TIMEOUT_MS = 4000;

/** The subscription's endpoint on another host of the same port: the same push service, another origin. */
function on(host: string, subscription: BrowserSubscription) {
  const endpoint = new URL(subscription.endpoint);
  endpoint.hostname = host;
  return { endpoint: endpoint.href, keys: subscription.keys };
}

/** A push sender with two lookup slots, its resolver stuck on `*.stuck.test`, and web-push-testing. */
async function senderWithTwoLookupSlots(t: Test) {
  const vapid = newVapid();
  const service = await startPushService(t);
  const resolver = stuckResolver(t);
  const sender = new WebPushSender({ vapid, timeoutMs: PUSH_TIMEOUT_MS, allowHttp: true, allowPrivateDestinations: true, maxLookups: 2, resolve: resolver.resolve });
  t.teardown(() => sender.close());
  const message = (title: string) => ({ payload: JSON.stringify({ title }) });
  return { vapid, service, resolver, sender, message };
}

t.test('two hosts that never answer take both lookup slots; later pushes to such hosts fail promptly, pushes that need no slot arrive', async (t) => {
  const { vapid, service, resolver, sender, message } = await senderWithTwoLookupSlots(t);

  const first = await sender.send(on('a.stuck.test', await service.subscribe(vapid.publicKey)), message('a'));
  t.match(first, { kind: 'failed', reason: 'timeout', detail: /DNS lookup did not answer/ }, 'a push whose lookup never answers times out');

  const byName = await service.subscribe(vapid.publicKey);
  t.match(await sender.send(on('localhost', byName), message('by name')), { kind: 'sent' }, 'a push by name finds the second slot free');
  t.same(await service.messages(byName.clientHash), [JSON.stringify({ title: 'by name' })], 'and arrives');

  const second = await sender.send(on('b.stuck.test', await service.subscribe(vapid.publicKey)), message('b'));
  t.match(second, { kind: 'failed', reason: 'timeout' }, 'a second host that never answers holds the second slot');

  // Both slots are held by lookups that will never answer. A fan-out through the real delivery: three
  // more such hosts, and one device on an IP literal, which needs no lookup.
  const metrics = createMetrics({ defaults: false });
  const { logger, lines } = capturedLogger('notification');
  const { delivery, store, db } = await startDeliveryOnStack(t, { push: sender, pushSlots: 8, metrics, logger });
  const acme = uniqueName('acme');
  const account = uniqueName('ana');
  await store.setPreferences(account, acme, [{ notificationType: 'temperature', isSubscribed: true }]);
  for (const host of ['c.stuck.test', 'd.stuck.test', 'e.stuck.test']) {
    t.equal(await store.saveDevice(account, on(host, await service.subscribe(vapid.publicKey))), 'saved', `a device on ${host}`);
  }
  const byLiteral = await service.subscribe(vapid.publicKey);
  t.equal(await store.saveDevice(account, on('127.0.0.1', byLiteral)), 'saved', 'a device on 127.0.0.1');
  const notification: Notification = {
    id: uniqueName('n'),
    kind: 'manual',
    severity: 'warning',
    title: 'Probe',
    message: 'lookup slots',
    buildingId: uniqueName('b'),
    createdAt: new Date().toISOString(),
    domainName: acme,
  };
  const report = await delivery.toDomains(new Map([[acme, notification]]), ANY_ALERTABLE_METRIC, { waitForPushes: true });

  t.same(report, { inApp: 1, push: 1, pushFailed: 3, pushRemoved: 0 }, 'the literal device got its push; the three others failed');
  t.equal((await service.messages(byLiteral.clientHash)).length, 1, 'the push to the IP literal arrived');
  t.same(resolver.stuck, ['a.stuck.test', 'b.stuck.test'], 'no lookup was started past the two slots');
  t.equal(await counterValue(metrics, 'notification_push_failed_total', { reason: 'timeout' }), 3, 'counted as timeouts');
  const failures = lines.filter((line) => line.msg === 'push failed; subscription kept');
  t.equal(failures.length, 3, 'each failure is logged');
  for (const line of failures) {
    t.match(line, { level: 40, reason: 'timeout', detail: /not looked up/ }, 'logged as a timeout waiting for a lookup');
    t.notOk(JSON.stringify(line).includes('/notify/'), 'without the endpoint path');
  }
  t.equal(await db.collection(COLLECTIONS.devices).countDocuments({ accountName: account }), 4, 'the subscriptions are kept');
  t.same(resolver.unexpected, [], 'no other name was looked up');
});

t.test('pushes in flight to one host that never answers share one lookup: the other slot stays free, and that host then fails at once', async (t) => {
  const { vapid, service, resolver, sender, message } = await senderWithTwoLookupSlots(t);

  // Two pushes at once to one origin: its pool opens a connection for each, and each connection looks
  // the host up.
  const subscriptions = [await service.subscribe(vapid.publicKey), await service.subscribe(vapid.publicKey)];
  const together = await Promise.all(subscriptions.map((subscription, i) => sender.send(on('a.stuck.test', subscription), message(`a${i}`))));
  t.match(together, [{ kind: 'failed', reason: 'timeout' }, { kind: 'failed', reason: 'timeout' }], 'both pushes to the host that never answers time out');
  t.same(resolver.stuck, ['a.stuck.test'], 'they shared one lookup');

  const byName = await service.subscribe(vapid.publicKey);
  t.match(await sender.send(on('localhost', byName), message('by name')), { kind: 'sent' }, 'a push to a host that answers finds the second slot free');
  t.same(await service.messages(byName.clientHash), [JSON.stringify({ title: 'by name' })], 'and arrives');

  const again = await sender.send(on('a.stuck.test', await service.subscribe(vapid.publicKey)), message('a3'));
  t.match(again, { kind: 'failed', reason: 'timeout', detail: /not looked up again yet/ }, 'a later push to the host that never answered fails at once, named as such');
  t.same(resolver.stuck, ['a.stuck.test'], 'without another lookup of it');

  const afterwards = await service.subscribe(vapid.publicKey);
  t.match(await sender.send(on('localhost', afterwards), message('afterwards')), { kind: 'sent' }, 'the working host still gets its pushes');
  t.same(resolver.unexpected, [], 'no other name was looked up');
});
