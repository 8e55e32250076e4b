/**
 * Push payloads stay within what every push service must accept (RFC 8030: a 4096-octet message, which
 * leaves 3993 octets of plaintext under aes128gcm, RFC 8291), however long their text is in UTF-8: a
 * /trigger message of 2000 CJK characters, or a breach whose ids are long. Only the push is shortened;
 * the in-app notification keeps every character. web-push-testing does not enforce the limit, so the
 * test reads what a browser would: the decrypted payload, and its size in octets. The fake push host
 * does enforce it on the encrypted body, as real push services do (413).
 */
import t from 'tap';
import { parseNotification, type Notification } from '../../../shared/notification.js';
import { MAX_PUSH_PAYLOAD_BYTES } from '../../../cloud/notification/push-payload.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { startFakePushHost } from './support/fake-push-host.js';
import { call, counterValue, member, newVapid, startHarness } from './support/harness.js';
import { startPushService, type BrowserSubscription } from './support/push-service.js';
import { channelRecorder, uniqueName, waitFor } from './support/stack.js';

const directory = await startFakeDirectory(t);
const push = await startPushService(t);
const vapid = newVapid();
// Started before the harness, so its check of unexpected requests runs after the harness drained.
const host = await startFakePushHost(t, { vapidPublicKey: vapid.publicKey });
const h = await startHarness(t, { directory, vapid });
const channel = await channelRecorder(t, h.channel);

t.equal(MAX_PUSH_PAYLOAD_BYTES, 4096 - 86 - 17, 'a 4096-octet message less the aes128gcm header, padding delimiter and tag');

async function device(accountClaims: string, domainName: string): Promise<BrowserSubscription> {
  const subscription = await push.subscribe(h.vapid!.publicKey);
  const res = await call(h.url, 'POST', '/subscribe', { claims: accountClaims, body: { subscription, domainName } });
  if (res.status !== 201) throw new Error(`subscribe failed: ${JSON.stringify(res.body)}`);
  return subscription;
}

/** The one push the browser received: its payload, its size in octets, and the notification it holds. */
async function onlyPush(subscription: BrowserSubscription): Promise<{ octets: number; notification: Notification }> {
  const messages = await waitFor('the push', async () => {
    const got = await push.messages(subscription.clientHash);
    return got.length > 0 ? got : undefined;
  });
  if (messages.length !== 1) throw new Error(`expected one push, got ${messages.length}`);
  const payload = messages[0] as string;
  const parsed = parseNotification(payload);
  if (!parsed.ok) throw new Error(`push payload is not the notification schema: ${parsed.errors.join('; ')}`);
  return { octets: Buffer.byteLength(payload, 'utf8'), notification: parsed.notification };
}

function published(id: string): Notification {
  const raw = channel.raw.find((r) => (JSON.parse(r) as { id: string }).id === id);
  const parsed = parseNotification(raw);
  if (!parsed.ok) throw new Error(`no notification ${id} on the channel`);
  return parsed.notification;
}

t.test('a /trigger message of 2000 CJK characters: the push is shortened to fit, the in-app notification is whole', async (t) => {
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  directory.set(building, [acme]);
  const ana = member(acme, 'ana');
  const phone = await device(ana.header, acme);
  const message = '温度警報：会議室の空調が停止しました。'.repeat(120).slice(0, 2000);
  t.ok(Buffer.byteLength(message) > 4096, 'the message alone is over the push limit');

  const res = await call(h.url, 'POST', '/trigger', { claims: ana.header, body: { buildingId: building, title: '空調停止', message } });
  t.same(res, { status: 200, body: { domains: [acme], inApp: 1, push: 1 } }, 'the push service accepted the push');
  const { octets, notification } = await onlyPush(phone);
  t.ok(octets <= MAX_PUSH_PAYLOAD_BYTES, `the decrypted payload is ${octets} octets, within ${MAX_PUSH_PAYLOAD_BYTES}`);
  t.ok(octets > MAX_PUSH_PAYLOAD_BYTES - 8, 'and uses the room there is (shortened by whole characters only)');
  t.equal(notification.title, '空調停止', 'the title is kept');
  t.ok(notification.message.endsWith('…'), 'the message says it was cut');
  t.ok(message.startsWith(notification.message.slice(0, -1)), 'the message is a prefix of the original');
  const inApp = published(notification.id);
  t.equal(inApp.message, message, 'the in-app notification carries the whole message');
  t.same({ ...notification, message: inApp.message }, inApp, 'the push differs from it in the message only');
});

t.test('the encrypted body is within the 4096 octets a push service must accept', async (t) => {
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  directory.set(building, [acme]);
  const ana = member(acme, 'ana');
  const subscription = { endpoint: host.subscribe(`/push/${uniqueName('d')}`, 201), keys: (await push.subscribe(vapid.publicKey)).keys };
  t.equal((await call(h.url, 'POST', '/subscribe', { claims: ana.header, body: { subscription, domainName: acme } })).status, 201);
  const message = '\u00e9\u00e8\u00ea\u4e2d\u6587'.repeat(400);
  const res = await call(h.url, 'POST', '/trigger', { claims: ana.header, body: { buildingId: building, message } });
  t.same(res, { status: 200, body: { domains: [acme], inApp: 1, push: 1 } }, 'the push service took it');
  t.equal(host.calls.length, 1);
  t.same(host.unexpected, [], 'no body over 4096 octets');
  t.equal(await counterValue(h.metrics, 'notification_push_failed_total', { reason: 'rejected' }), 0);
});

t.test('a message that fits is pushed unchanged', async (t) => {
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  directory.set(building, [acme]);
  const ana = member(acme, 'ana');
  const phone = await device(ana.header, acme);
  const message = '会議室'.repeat(400);
  const res = await call(h.url, 'POST', '/trigger', { claims: ana.header, body: { buildingId: building, message } });
  t.match(res, { status: 200, body: { push: 1 } });
  const { notification } = await onlyPush(phone);
  t.same(notification, published(notification.id), 'the push is the in-app notification');
});

t.test('a breach with long ids: the push fits, the in-app notification is whole', async (t) => {
  const acme = uniqueName('acme');
  const building = `${uniqueName('b')}-${'東'.repeat(200)}`;
  const roomId = `会議室-${'北'.repeat(250)}`;
  const field = `温度-${'西'.repeat(250)}`;
  directory.set(building, [acme]);
  const ana = member(acme, 'ana');
  const phone = await device(ana.header, acme);
  const alert = { alertId: uniqueName('alert'), type: 'temperature', field, buildingId: building, roomId, value: 31, threshold: 28 };
  t.equal(await h.breach.handle(Buffer.from(JSON.stringify(alert))), 'delivered');
  const { octets, notification } = await onlyPush(phone);
  t.ok(octets <= MAX_PUSH_PAYLOAD_BYTES, `the decrypted payload is ${octets} octets, within ${MAX_PUSH_PAYLOAD_BYTES}`);
  t.match(notification, { kind: 'alert', buildingId: building, roomId, field, domainName: acme }, 'every id is carried whole');
  const inApp = published(notification.id);
  t.ok(Buffer.byteLength(JSON.stringify(inApp)) > MAX_PUSH_PAYLOAD_BYTES, 'the in-app notification is over the push limit');
  t.same({ ...notification, message: inApp.message }, inApp, 'the push differs from it in the message only');
  t.ok(inApp.message.startsWith(notification.message.slice(0, -1)) && notification.message.endsWith('…'), 'its message is a marked prefix of the in-app one');
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
