/**
 * A push service answers 410 or 404 for an endpoint whose subscription was re-registered (new keys)
 * while that push, made with the old keys, was in flight: the answer is about the subscription the
 * push was made for, so the re-registered one is kept. Before, the delete went by endpoint alone and
 * removed the fresh subscription: the device silently got no more pushes until it subscribed again.
 */
import t from 'tap';
import { COLLECTIONS } from '../../../cloud/notification/store.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { startFakePushHost } from './support/fake-push-host.js';
import { browserKeys, call, claims, counterValue, member, newVapid, startHarness } from './support/harness.js';
import { uniqueName, waitFor } from './support/stack.js';

const directory = await startFakeDirectory(t);
const twin = claims('system:digital-twin', 'digital-twin');

for (const status of [410, 404]) {
  t.test(`a ${status} for the old keys keeps a subscription re-registered meanwhile; without a re-registration it deletes`, async (t) => {
    const vapid = newVapid();
    const host = await startFakePushHost(t, { vapidPublicKey: vapid.publicKey });
    const h = await startHarness(t, { directory, vapid });
    const acme = uniqueName('acme');
    const building = uniqueName('b');
    directory.set(building, [acme]);
    const ana = member(acme);
    let answer = (): void => undefined;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const endpoint = host.subscribe('/push/phone', status, { answerWhen: answered });
    const oldKeys = browserKeys();
    t.equal((await call(h.url, 'POST', '/subscribe', { claims: ana.header, body: { subscription: { endpoint, keys: oldKeys }, domainName: acme } })).status, 201);

    const trigger = call(h.url, 'POST', '/trigger', { claims: twin, body: { buildingId: building } });
    await waitFor('the push to the old keys', () => host.calls.length === 1);
    const newKeys = browserKeys();
    t.equal((await call(h.url, 'POST', '/subscribe', { claims: ana.header, body: { subscription: { endpoint, keys: newKeys }, domainName: acme } })).status, 201, 're-registered with new keys');
    answer();
    t.same((await trigger).body, { domains: [acme], inApp: 1, push: 0 });
    const device = await h.db.collection(COLLECTIONS.devices).findOne({ endpoint }, { projection: { _id: 0, accountName: 1, keys: 1 } });
    t.same(device, { accountName: ana.account, keys: newKeys }, 'the re-registered subscription is kept');
    t.equal(await counterValue(h.metrics, 'notification_push_removed_total'), 0, 'nothing counted removed');

    // The next push goes to the new keys; its own 410 or 404 deletes it.
    t.same((await call(h.url, 'POST', '/trigger', { claims: twin, body: { buildingId: building } })).body, { domains: [acme], inApp: 1, push: 0 });
    t.equal(host.calls.length, 2, 'the kept subscription was pushed again');
    t.equal(await h.db.collection(COLLECTIONS.devices).countDocuments({ endpoint }), 0, 'and deleted on its own answer');
    t.equal(await counterValue(h.metrics, 'notification_push_removed_total'), 1);
  });
}

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
