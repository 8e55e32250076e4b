/**
 * WEB_PUSH_ALLOW_HTTP off is enforced on every push, not only at /subscribe: an `http:` endpoint stored
 * while the flag was on (or by an earlier version) gets no cleartext push. The push is counted as
 * `forbidden_destination`, like a private destination, and the subscription is kept. The loopback push
 * host behind the endpoint has no subscription at its path, so any request to it fails the test.
 */
import t from 'tap';
import { COLLECTIONS } from '../../../cloud/notification/store.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { startFakePushHost } from './support/fake-push-host.js';
import { browserKeys, call, claims, counterValue, member, newVapid, startHarness } from './support/harness.js';
import { uniqueName } from './support/stack.js';
import { capturedLogger } from '../../support/captured-logger.js';

const directory = await startFakeDirectory(t);
const twin = claims('system:digital-twin', 'digital-twin');

t.test('flag off: a stored http: endpoint is not pushed to; counted forbidden_destination, the subscription kept', async (t) => {
  const { logger, text: logs } = capturedLogger('notification');
  const vapid = newVapid();
  // Started before the harness, so its check of unexpected requests runs after the harness drained.
  const trap = await startFakePushHost(t, { vapidPublicKey: vapid.publicKey });
  const h = await startHarness(t, {
    directory,
    vapid,
    allowHttp: false,
    // Loopback is allowed: what refuses the push here is the scheme alone.
    allowPrivateDestinations: true,
    logger,
  });
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  directory.set(building, [acme]);
  const ana = member(acme, 'ana');
  const keys = browserKeys();
  const endpoint = `${trap.origin}/push/stored-while-http-was-allowed`;
  t.equal((await call(h.url, 'POST', '/subscribe', { claims: ana.header, body: { subscription: { endpoint, keys }, domainName: acme } })).status, 400, '/subscribe refuses it now');
  // Stored when the flag was on.
  t.equal(await h.store.saveDevice(ana.account, { endpoint, keys }), 'saved');
  await h.store.setPreferences(ana.account, acme, [{ notificationType: 'temperature', isSubscribed: true }]);

  const res = await call(h.url, 'POST', '/trigger', { claims: twin, body: { buildingId: building, title: 'Probe' } });
  t.same(res, { status: 200, body: { domains: [acme], inApp: 1, push: 0 } });
  t.equal(trap.received, 0, 'no request reached the push host');
  t.equal(await counterValue(h.metrics, 'notification_push_failed_total', { reason: 'forbidden_destination' }), 1);
  t.equal(await counterValue(h.metrics, 'notification_push_sent_total'), 0);
  t.equal(await counterValue(h.metrics, 'notification_push_removed_total'), 0);
  t.equal(await h.db.collection(COLLECTIONS.devices).countDocuments({ endpoint }), 1, 'the subscription is kept');

  const refused = logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.reason === 'forbidden_destination');
  t.match(refused, [{ level: 40, msg: 'push failed; subscription kept', pushService: trap.origin, detail: /http: endpoints are refused.*WEB_PUSH_ALLOW_HTTP is off/ }]);
  t.notOk(refused.some((entry) => ['/push/', keys.p256dh, keys.auth].some((secret) => JSON.stringify(entry).includes(secret))), 'the log line holds no endpoint path or device key');
});

t.test('flag on: the same stored endpoint is pushed to (local push services)', async (t) => {
  const vapid = newVapid();
  const local = await startFakePushHost(t, { vapidPublicKey: vapid.publicKey });
  const h = await startHarness(t, { directory, vapid, allowHttp: true, allowPrivateDestinations: true });
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  directory.set(building, [acme]);
  const ana = member(acme, 'ana');
  t.equal(await h.store.saveDevice(ana.account, { endpoint: local.subscribe('/push/http', 201), keys: browserKeys() }), 'saved');
  await h.store.setPreferences(ana.account, acme, [{ notificationType: 'temperature', isSubscribed: true }]);
  const res = await call(h.url, 'POST', '/trigger', { claims: twin, body: { buildingId: building } });
  t.same(res.body, { domains: [acme], inApp: 1, push: 1 });
  t.same(local.calls, ['/push/http']);
  t.equal(await counterValue(h.metrics, 'notification_push_failed_total', { reason: 'forbidden_destination' }), 0);
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
