/**
 * Web Push delivery against web-push-testing: an expired subscription (410) is deleted by endpoint, a
 * 404 too; other failures, a 403 among them (a VAPID key mismatch), are logged and the subscription
 * kept; one bad endpoint never stops the others;
 * pushes run with bounded concurrency; without VAPID keys every push fails and is counted. The 404, 403,
 * 503 and slow answers come from a fake push host (support/fake-push-host.ts) that takes only
 * well-formed Web Push requests to the subscribed paths.
 */
import t from 'tap';
import { parseNotification } from '../../../shared/notification.js';
import { COLLECTIONS } from '../../../cloud/notification/store.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { startFakePushHost } from './support/fake-push-host.js';
import { call, claims, counterValue, newVapid, startHarness } from './support/harness.js';
import { startPushService } from './support/push-service.js';
import { uniqueName, waitFor } from './support/stack.js';
import { capturedLogger } from '../../support/captured-logger.js';

const directory = await startFakeDirectory(t);
const push = await startPushService(t);
const twin = claims('system:digital-twin', 'digital-twin');

t.test('410 and 404 delete the subscription; a 403 and other errors keep it; the good device still gets its message', async (t) => {
  const { logger, text: logs } = capturedLogger('notification');
  const vapid = newVapid();
  // Started before the harness, so its check of unexpected requests runs after the harness drained.
  const host = await startFakePushHost(t, { vapidPublicKey: vapid.publicKey });
  const h = await startHarness(t, { directory, vapid, logger });
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  directory.set(building, [acme]);
  const ana = uniqueName('ana');
  const anaClaims = claims(`sub-${ana}`, ana, [{ domainName: acme, role: 'member' }]);
  const good = await push.subscribe(h.vapid!.publicKey);
  const expired = await push.subscribe(h.vapid!.publicKey);
  const otherKey = await push.subscribe(newVapid().publicKey);
  const keys = good.keys;
  const endpoints = {
    good: good.endpoint,
    expired: expired.endpoint,
    otherKey: otherKey.endpoint,
    missing: host.subscribe('/push/a', 404),
    forbidden: host.subscribe('/push/f', 403),
    failing: host.subscribe('/push/b', 503),
    closed: 'http://127.0.0.1:1/push/c',
  };
  for (const [what, endpoint] of Object.entries(endpoints)) {
    const subscription = what === 'good' ? good : what === 'expired' ? expired : what === 'otherKey' ? otherKey : { endpoint, keys };
    const res = await call(h.url, 'POST', '/subscribe', { claims: anaClaims, body: { subscription, domainName: acme } });
    t.equal(res.status, 201, `subscribed ${what}`);
  }
  await push.expire(expired.clientHash);

  const res = await call(h.url, 'POST', '/trigger', { claims: twin, body: { buildingId: building, title: 'Check-in', message: 'Lobby closed' } });
  t.same(res, { status: 200, body: { domains: [acme], inApp: 1, push: 1 } });

  const received = await push.messages(good.clientHash);
  t.equal(received.length, 1);
  const parsed = parseNotification(received[0]);
  t.ok(parsed.ok, 'the decrypted payload is the shared notification schema');
  if (parsed.ok) t.match(parsed.notification, { kind: 'manual', title: 'Check-in', message: 'Lobby closed', domainName: acme, buildingId: building });

  const left = await h.db.collection(COLLECTIONS.devices).find({ accountName: ana }).toArray();
  t.same(
    left.map((d) => d.endpoint).sort(),
    [endpoints.good, endpoints.otherKey, endpoints.forbidden, endpoints.failing, endpoints.closed].sort(),
    'the 410 and 404 subscriptions are gone; the 403 one is kept with the rest',
  );
  t.equal(await counterValue(h.metrics, 'notification_push_sent_total'), 1);
  t.equal(await counterValue(h.metrics, 'notification_push_removed_total'), 2);
  t.equal(await counterValue(h.metrics, 'notification_push_failed_total', { reason: 'rejected' }), 3, 'a VAPID key the push service refuses, a 403 and a 503');
  t.equal(await counterValue(h.metrics, 'notification_push_failed_total', { reason: 'unreachable' }), 1);
  t.same([...host.calls].sort(), ['/push/a', '/push/b', '/push/f'], 'each fake endpoint got one well-formed push');
  const refused = logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.status === 403);
  t.equal(refused.length, 1, 'the 403 is logged once');
  t.match(refused[0], { level: 40, msg: 'push failed; subscription kept', reason: 'rejected', pushService: host.origin, detail: /VAPID/ });
  const line = JSON.stringify(refused[0]);
  for (const secret of [endpoints.forbidden, keys.p256dh, keys.auth, h.vapid!.privateKey]) t.notOk(line.includes(secret), 'the log line holds no endpoint path, device key or VAPID key');

  const again = await call(h.url, 'POST', '/trigger', { claims: twin, body: { buildingId: building } });
  t.same(again.body, { domains: [acme], inApp: 1, push: 1 });
  const count = (path: string) => host.calls.filter((p) => p === path).length;
  t.equal(count('/push/a'), 1, 'a deleted subscription is not pushed again');
  t.equal(count('/push/f'), 2, 'one the push service refused with 403 is kept and tried again');
  t.equal(count('/push/b'), 2, 'so is one that answered 503');
  t.equal(host.received, 5, 'and nothing else reached the fake host');
  t.equal((await push.messages(good.clientHash)).length, 2);
});

t.test('pushes run with bounded concurrency', async (t) => {
  const vapid = newVapid();
  const slow = await startFakePushHost(t, { vapidPublicKey: vapid.publicKey });
  const h = await startHarness(t, { directory, vapid });
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  directory.set(building, [acme]);
  const template = await push.subscribe(vapid.publicKey);
  // Every push is held until the bound's worth of them (the harness pool: 8) has arrived at once.
  const POOL = 8;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  for (let i = 0; i < 30; i++) {
    const account = uniqueName('user');
    const res = await call(h.url, 'POST', '/subscribe', {
      claims: claims(`sub-${account}`, account, [{ domainName: acme, role: 'member' }]),
      body: { subscription: { endpoint: slow.subscribe(`/push/${i}`, 201, { answerWhen: released }), keys: template.keys }, domainName: acme },
    });
    t.equal(res.status, 201);
  }
  const trigger = call(h.url, 'POST', '/trigger', { claims: twin, body: { buildingId: building } });
  await waitFor(`${POOL} pushes to be held by the push service at once`, () => slow.calls.length >= POOL);
  release();
  const res = await trigger;
  t.same(res.body, { domains: [acme], inApp: 1, push: 30 });
  t.same([...slow.calls].sort(), Array.from({ length: 30 }, (_, i) => `/push/${i}`).sort(), 'one well-formed push to each subscription');
  t.equal(slow.peak, POOL, `exactly ${POOL} pushes in flight at most: they run concurrently, up to the harness pool`);
});

t.test('without VAPID keys every push fails and is counted; in-app still works', async (t) => {
  const h = await startHarness(t, { directory, vapid: null });
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  directory.set(building, [acme]);
  const ana = uniqueName('ana');
  const device = await push.subscribe(newVapid().publicKey);
  const sub = await call(h.url, 'POST', '/subscribe', { claims: claims(`sub-${ana}`, ana, [{ domainName: acme, role: 'member' }]), body: { subscription: device, domainName: acme } });
  t.equal(sub.status, 201, 'devices can still be registered');
  const key = await call(h.url, 'GET', '/public-key');
  t.equal(key.status, 404);
  t.match(key.body, { type: 'Not Found', message: /VAPID/ });
  const res = await call(h.url, 'POST', '/trigger', { claims: twin, body: { buildingId: building } });
  t.same(res, { status: 200, body: { domains: [acme], inApp: 1, push: 0 } });
  t.equal(await counterValue(h.metrics, 'notification_push_failed_total', { reason: 'not_configured' }), 1);
  t.same(await push.messages(device.clientHash), []);
  t.equal(await h.db.collection(COLLECTIONS.devices).countDocuments({ endpoint: device.endpoint }), 1, 'the subscription is kept');
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});

t.test('a 410 for a subscription deleted while the push was in flight is neither a failure nor a removal', async (t) => {
  const vapid = newVapid();
  let release!: () => void;
  const answered = new Promise<void>((resolve) => (release = resolve));
  const host = await startFakePushHost(t, { vapidPublicKey: vapid.publicKey });
  const h = await startHarness(t, { directory, vapid });
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  directory.set(building, [acme]);
  const ana = uniqueName('ana');
  const anaClaims = claims(`sub-${ana}`, ana, [{ domainName: acme, role: 'member' }]);
  const good = await push.subscribe(vapid.publicKey);
  const endpoint = host.subscribe('/push/gone', 410, { answerWhen: answered });
  t.equal((await call(h.url, 'POST', '/subscribe', { claims: anaClaims, body: { subscription: { endpoint, keys: good.keys }, domainName: acme } })).status, 201);

  const triggered = call(h.url, 'POST', '/trigger', { claims: twin, body: { buildingId: building } });
  while (!host.calls.includes('/push/gone')) await new Promise((resolve) => setTimeout(resolve, 5));
  // The push is at the push service, its answer held: another push to the same dead endpoint (or
  // another replica) deletes the subscription first.
  t.equal((await h.db.collection(COLLECTIONS.devices).deleteOne({ endpoint })).deletedCount, 1);
  release();
  t.equal((await triggered).status, 200);
  await h.delivery.drain();
  t.equal(await counterValue(h.metrics, 'notification_push_removed_total'), 0, 'not removed by this push');
  t.equal(await counterValue(h.metrics, 'notification_push_failed_total', { reason: 'rejected' }), 0, 'and not counted a failure');
});

