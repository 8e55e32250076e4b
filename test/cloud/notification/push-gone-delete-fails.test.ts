/**
 * A push service answered 410 (the subscription expired) and deleting the device then failed in the
 * database: the push did not fail, and its service was reachable. It was counted and logged as a push
 * to an unreachable service, sending whoever watches `notification_push_failed_total{reason="unreachable"}`
 * to look at the network. The device is kept (the next push answers 410 again) and nothing is counted
 * as failed or removed.
 */
import t from 'tap';
import { ANY_ALERTABLE_METRIC } from '../../../cloud/notification/delivery.js';
import { WebPushSender } from '../../../cloud/notification/push.js';
import type { NotificationStore } from '../../../cloud/notification/store.js';
import { startDeliveryOnStack, temperatureAlertIn } from './support/delivery-on-stack.js';
import { startFakePushHost } from './support/fake-push-host.js';
import { browserKeys, newVapid } from './support/harness.js';
import { uniqueName } from './support/stack.js';

t.test('a 410 whose device cannot be deleted is no push failure, and the device stays', async (t) => {
  const vapid = newVapid();
  const host = await startFakePushHost(t, { vapidPublicKey: vapid.publicKey });
  const sender = new WebPushSender({ vapid, allowHttp: true, allowPrivateDestinations: true });
  t.teardown(() => sender.close());
  let deletes = 0;
  const { delivery, store } = await startDeliveryOnStack(t, {
    push: sender,
    pushSlots: 1,
    // The database failing the delete, as a FerretDB restart would.
    storeSeenByDelivery: (real) =>
      Object.assign(Object.create(real) as NotificationStore, {
        removeDevice: async () => {
          deletes += 1;
          throw new Error('connection closed');
        },
      }),
  });
  const domain = uniqueName('acme');
  const account = uniqueName('ana');
  await store.setPreferences(account, domain, [{ notificationType: 'temperature', isSubscribed: true }]);
  const endpoint = host.subscribe('/push/expired', 410);
  await store.saveDevice(account, { endpoint, keys: browserKeys() });

  const report = await delivery.toDomains(new Map([[domain, temperatureAlertIn(domain)]]), ANY_ALERTABLE_METRIC, { waitForPushes: true });
  t.equal(deletes, 1, 'the 410 asked for the delete');
  t.same(report, { inApp: 1, push: 0, pushFailed: 0, pushRemoved: 0 }, 'neither a failed push nor a removed device');
  t.equal((await store.recipientsIn(domain, 'temperature')).length, 1, 'the device is still stored');
});
