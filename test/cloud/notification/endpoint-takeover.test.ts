/**
 * Endpoint takeover. A subscribe for an endpoint stored under another account rebinds it only when the
 * browser's own p256dh and auth keys are presented; otherwise it is 409 and nothing changes, so the
 * owner keeps receiving (decryptable) pushes. The owner may always replace its keys (key rotation).
 */
import t from 'tap';
import { parseNotification } from '../../../shared/notification.js';
import { COLLECTIONS } from '../../../cloud/notification/store.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { browserKeys, call, claims, member, startHarness } from './support/harness.js';
import { startPushService } from './support/push-service.js';
import { uniqueName } from './support/stack.js';

const directory = await startFakeDirectory(t);
const push = await startPushService(t);
const h = await startHarness(t, { directory });
const twin = claims('system:digital-twin', 'digital-twin');

async function deviceOf(endpoint: string) {
  return h.db.collection(COLLECTIONS.devices).findOne({ endpoint }, { projection: { _id: 0, accountName: 1, keys: 1 } });
}

t.test('another account presenting other keys gets 409 and changes nothing; the owner still receives its alerts', async (t) => {
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  directory.set(building, [acme]);
  const ana = member(acme);
  const mallory = member(acme);
  const phone = await push.subscribe(h.vapid!.publicKey);
  t.equal((await call(h.url, 'POST', '/subscribe', { claims: ana.header, body: { subscription: phone, domainName: acme } })).status, 201);

  for (const [what, keys] of [
    ['fresh keys', browserKeys()],
    ['the right p256dh with another auth', { p256dh: phone.keys.p256dh, auth: browserKeys().auth }],
    ['another p256dh with the right auth', { p256dh: browserKeys().p256dh, auth: phone.keys.auth }],
  ] as const) {
    const res = await call(h.url, 'POST', '/subscribe', { claims: mallory.header, body: { subscription: { endpoint: phone.endpoint, keys }, domainName: acme } });
    t.equal(res.status, 409, what);
    t.match(res.body, { type: 'Conflict', message: /registered to another account/ }, what);
  }
  t.same(await deviceOf(phone.endpoint), { accountName: ana.account, keys: phone.keys }, 'the device still belongs to ana, with her keys');
  t.equal(await h.db.collection(COLLECTIONS.preferences).countDocuments({ accountName: mallory.account }), 0, 'the refused subscribe stored no preferences');

  const res = await call(h.url, 'POST', '/trigger', { claims: twin, body: { buildingId: building, title: 'Still mine' } });
  t.same(res.body, { domains: [acme], inApp: 1, push: 1 });
  const received = await push.messages(phone.clientHash);
  t.equal(received.length, 1, 'the push reached the device and decrypted with its keys');
  const parsed = parseNotification(received[0]);
  t.ok(parsed.ok && parsed.notification.title === 'Still mine');
});

t.test('another account presenting the same keys (the browser that holds the subscription) rebinds it', async (t) => {
  const acme = uniqueName('acme');
  const ana = member(acme);
  const bob = member(acme);
  const phone = await push.subscribe(h.vapid!.publicKey);
  t.equal((await call(h.url, 'POST', '/subscribe', { claims: ana.header, body: { subscription: phone } })).status, 201);
  const res = await call(h.url, 'POST', '/subscribe', { claims: bob.header, body: { subscription: phone, domainName: acme } });
  t.equal(res.status, 201);
  t.same(await deviceOf(phone.endpoint), { accountName: bob.account, keys: phone.keys });
  t.equal(await h.db.collection(COLLECTIONS.devices).countDocuments({ endpoint: phone.endpoint }), 1);
});

t.test('the same account re-subscribing with new keys (key rotation) replaces them', async (t) => {
  const ana = member(uniqueName('acme'));
  const phone = await push.subscribe(h.vapid!.publicKey);
  t.equal((await call(h.url, 'POST', '/subscribe', { claims: ana.header, body: { subscription: phone } })).status, 201);
  const rotated = browserKeys();
  const res = await call(h.url, 'POST', '/subscribe', { claims: ana.header, body: { subscription: { endpoint: phone.endpoint, keys: rotated } } });
  t.equal(res.status, 201);
  t.same(await deviceOf(phone.endpoint), { accountName: ana.account, keys: rotated });
  t.equal((await call(h.url, 'POST', '/subscribe', { claims: ana.header, body: { subscription: { endpoint: phone.endpoint, keys: rotated } } })).status, 201, 'repeating it is harmless');
});

t.test('two accounts subscribing a new endpoint at once with different keys: one owns it, the other gets 409', async (t) => {
  const acme = uniqueName('acme');
  const endpoint = `https://push.example.com/${uniqueName('race')}`;
  const racers = [member(acme), member(acme)].map((m) => ({ ...m, keys: browserKeys() }));
  const results = await Promise.all(racers.map((r) => call(h.url, 'POST', '/subscribe', { claims: r.header, body: { subscription: { endpoint, keys: r.keys } } })));
  t.same(results.map((r) => r.status).sort(), [201, 409]);
  const winner = racers[results.findIndex((r) => r.status === 201)];
  t.same(await deviceOf(endpoint), { accountName: winner?.account, keys: winner?.keys }, 'stored as the winner sent it');
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
