/**
 * A closed push sender sends nothing. At shutdown the sender closes once the drain has run out: its
 * pushes in flight are aborted, each frees its slot, and the pushes still queued then reach `send`.
 * Those must fail without being sent, rather than open a fresh connection pool (never closed) and
 * push after the service stopped.
 *
 * The push in flight is held unanswered by a fake push host; the queued one is for a device on the
 * real web-push-testing. The store, Redis and the delivery are the real ones; one shared slot.
 */
import t from 'tap';
import { ANY_ALERTABLE_METRIC } from '../../../cloud/notification/delivery.js';
import { WebPushSender } from '../../../cloud/notification/push.js';
import { startDeliveryOnStack, temperatureAlertIn } from './support/delivery-on-stack.js';
import { startFakePushHost } from './support/fake-push-host.js';
import { browserKeys, newVapid } from './support/harness.js';
import { startPushService } from './support/push-service.js';
import { uniqueName, waitFor } from './support/stack.js';

t.test('pushes still queued when the sender closes fail without being sent', async (t) => {
  const vapid = newVapid();
  // Started first, so its check of unexpected requests runs after the delivery drained.
  const host = await startFakePushHost(t, { vapidPublicKey: vapid.publicKey });
  const service = await startPushService(t);
  const sender = new WebPushSender({ vapid, timeoutMs: 120_000, allowHttp: true, allowPrivateDestinations: true });
  t.teardown(() => sender.close());
  const { delivery, store } = await startDeliveryOnStack(t, { push: sender, pushSlots: 1 });
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  t.teardown(() => release());

  const first = { domain: uniqueName('acme'), account: uniqueName('ana') };
  await store.setPreferences(first.account, first.domain, [{ notificationType: 'temperature', isSubscribed: true }]);
  await store.saveDevice(first.account, { endpoint: host.subscribe('/push/in-flight', 201, { answerWhen: held }), keys: browserKeys() });
  const queued = { domain: uniqueName('globex'), account: uniqueName('bo') };
  await store.setPreferences(queued.account, queued.domain, [{ notificationType: 'temperature', isSubscribed: true }]);
  const browser = await service.subscribe(vapid.publicKey);
  await store.saveDevice(queued.account, { endpoint: browser.endpoint, keys: browser.keys });

  const fanOut = (domain: string) => delivery.toDomains(new Map([[domain, temperatureAlertIn(domain)]]), ANY_ALERTABLE_METRIC, { waitForPushes: true });
  const inFlight = fanOut(first.domain);
  await waitFor('the first push at its host', () => host.received === 1);
  const waiting = fanOut(queued.domain);
  await waitFor('the second fan-out’s push queued for the one slot', () => delivery.accountsWithPushesPending === 2);

  // What main.ts does once the drain has run out.
  await sender.close();
  t.same(await inFlight, { inApp: 1, push: 0, pushFailed: 1, pushRemoved: 0 }, 'the push in flight is aborted');
  t.same(await waiting, { inApp: 1, push: 0, pushFailed: 1, pushRemoved: 0 }, 'the queued push fails too');
  t.same(await service.messages(browser.clientHash), [], 'nothing reached the push service after the close');
  t.equal(sender.pushServicesKept, 0, 'no connection pool was opened after the close');

  const later = await sender.send({ endpoint: host.subscribe('/push/later', 201), keys: browserKeys() }, { payload: '{}' });
  t.match(later, { kind: 'failed', reason: 'unreachable', detail: /closed/ }, 'any later push fails, naming the closed sender');
  t.same(host.calls, ['/push/in-flight'], 'the push host got only the push that was in flight');
});
