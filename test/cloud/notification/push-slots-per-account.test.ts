/**
 * One account's pushes hold at most two of the shared push slots at once. An account chooses its
 * endpoints; pushes to hosts that accept the connection and never answer would otherwise take every
 * slot of the process for their whole timeout, and the pushes of every other tenant, on the breach path
 * as on /trigger, would wait behind them. The account's other pushes wait in its own line, and the
 * line is dropped once it is empty.
 *
 * The hanging account's endpoints are on a fake push host whose answers the test holds (the push
 * timeout is far longer than the test); the other account's device is on the real web-push-testing.
 * The store, Redis and the delivery are the real ones. Nothing here is timed: the check waits until the
 * other account's push arrived or the hanging pushes hold every shared slot, which is what happened
 * before this bound.
 */
import t, { type Test } from 'tap';
import { ANY_ALERTABLE_METRIC, type DeliveryReport } from '../../../cloud/notification/delivery.js';
import { WebPushSender } from '../../../cloud/notification/push.js';
import { startDeliveryOnStack, temperatureAlertIn } from './support/delivery-on-stack.js';
import { startFakePushHost } from './support/fake-push-host.js';
import { browserKeys, newVapid } from './support/harness.js';
import { startPushService } from './support/push-service.js';
import { uniqueName, waitFor } from './support/stack.js';

/** Shared push slots, as PUSH_CONCURRENCY. */
const SLOTS = 8;
/** More devices than slots: before the bound, their pushes took all of them. */
const HANGING_DEVICES = 12;

/**
 * A delivery with 8 shared slots; an account in its own domain whose 12 devices are on a host that
 * answers only once released, and an account of another domain with one device on web-push-testing.
 */
async function setUp(t: Test) {
  const vapid = newVapid();
  // Started first, so its check of unexpected requests runs after the delivery drained.
  const host = await startFakePushHost(t, { vapidPublicKey: vapid.publicKey });
  const service = await startPushService(t);
  const sender = new WebPushSender({ vapid, timeoutMs: 120_000, allowHttp: true, allowPrivateDestinations: true });
  t.teardown(() => sender.close());
  const { delivery, store } = await startDeliveryOnStack(t, { push: sender, pushSlots: SLOTS });
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  // Runs before the drain (teardowns run last-registered first), so a failed check never hangs it.
  t.teardown(() => release());

  const hangingDomain = uniqueName('mallory-corp');
  const hanging = uniqueName('mallory');
  await store.setPreferences(hanging, hangingDomain, [{ notificationType: 'temperature', isSubscribed: true }]);
  for (let i = 0; i < HANGING_DEVICES; i++) {
    const endpoint = host.subscribe(`/push/hanging-${i}`, 201, { answerWhen: held });
    t.equal(await store.saveDevice(hanging, { endpoint, keys: browserKeys() }), 'saved');
  }

  const otherDomain = uniqueName('acme');
  const other = uniqueName('ana');
  await store.setPreferences(other, otherDomain, [{ notificationType: 'temperature', isSubscribed: true }]);
  const browser = await service.subscribe(vapid.publicKey);
  t.equal(await store.saveDevice(other, { endpoint: browser.endpoint, keys: browser.keys }), 'saved');

  /** A fan-out to a domain's devices: waited for by its caller as /trigger's, or in the background as a breach slice's. */
  async function fanOut(domainName: string, path: 'trigger' | 'breach'): Promise<DeliveryReport | undefined> {
    const alert = temperatureAlertIn(domainName);
    if (path === 'trigger') return delivery.toDomains(new Map([[domainName, alert]]), ANY_ALERTABLE_METRIC, { waitForPushes: true });
    await delivery.pushInBackground([{ byDomain: new Map([[domainName, alert]]), metric: 'temperature', topicSource: alert.id }], (source) => source);
    return undefined;
  }
  const otherDelivered = async () => (await service.messages(browser.clientHash)).length;
  return { host, delivery, release, hangingDomain, otherDomain, fanOut, otherDelivered };
}

for (const [hangingPath, otherPath] of [
  ['trigger', 'breach'],
  ['breach', 'trigger'],
] as const) {
  t.test(`an account whose endpoints never answer (${hangingPath} pushes) holds two shared slots; another tenant's ${otherPath} push is delivered meanwhile`, async (t) => {
    const { host, delivery, release, hangingDomain, otherDomain, fanOut, otherDelivered } = await setUp(t);

    const hangingFanOut = fanOut(hangingDomain, hangingPath);
    await waitFor('the hanging account’s first pushes at its host', () => host.received >= 2);
    const otherFanOut = fanOut(otherDomain, otherPath);
    await waitFor('the other account’s push delivered, or the hanging pushes holding every shared slot', async () => (await otherDelivered()) > 0 || host.received >= SLOTS);

    t.equal(await otherDelivered(), 1, 'the other tenant’s push arrived while the hanging pushes are unanswered');
    t.equal(host.received, 2, 'the hanging account’s pushes hold two of the shared slots, no more');
    t.ok(delivery.accountsWithPushesPending >= 1, 'its other pushes wait in its own line');

    release();
    const [hangingReport, otherReport] = await Promise.all([hangingFanOut, otherFanOut]);
    if (hangingPath === 'trigger') t.same(hangingReport, { inApp: 1, push: HANGING_DEVICES, pushFailed: 0, pushRemoved: 0 }, 'every waiting push went out once answered');
    if (otherPath === 'trigger') t.same(otherReport, { inApp: 1, push: 1, pushFailed: 0, pushRemoved: 0 });
    t.equal(await delivery.drain(), true);
    t.equal(host.calls.length, HANGING_DEVICES, 'each hanging device got its push, once');
    t.equal(host.peak, 2, 'never more than two of them in flight');
    t.equal(delivery.accountsWithPushesPending, 0, 'the lines are dropped once empty');
  });
}
