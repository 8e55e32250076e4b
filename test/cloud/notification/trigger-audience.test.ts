/**
 * POST /trigger: each audience case, with the building directory as a local fake, a real Redis channel
 * and real pushes through web-push-testing (the decrypted payload is what a browser would read).
 */
import t from 'tap';
import { parseNotification, type Notification } from '../../../shared/notification.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { call, claims, counterValue, startHarness } from './support/harness.js';
import { startPushService, type BrowserSubscription } from './support/push-service.js';
import { channelRecorder, uniqueName, waitFor } from './support/stack.js';

const directory = await startFakeDirectory(t);
const push = await startPushService(t);
const h = await startHarness(t, { directory });
const channel = await channelRecorder(t, h.channel);

const acme = uniqueName('acme');
const globex = uniqueName('globex');
const shared = uniqueName('b-shared');
const globexOnly = uniqueName('b-globex');
const bare = uniqueName('b-bare');
directory.set(shared, [acme, globex]).set(globexOnly, [globex]).set(bare, []);

const ana = uniqueName('ana');
const anaClaims = claims(`sub-${ana}`, ana, [{ domainName: acme, role: 'member' }]);
const gus = uniqueName('gus');
const gusClaims = claims(`sub-${gus}`, gus, [{ domainName: globex, role: 'facility_manager' }]);
const twinClaims = claims('system:digital-twin', 'digital-twin');
const adminClaims = claims('sub-root', uniqueName('root'), [{ domainName: uniqueName('ops'), role: 'admin' }]);

async function device(accountClaims: string, domainName: string): Promise<BrowserSubscription> {
  const subscription = await push.subscribe(h.vapid!.publicKey);
  const res = await call(h.url, 'POST', '/subscribe', { claims: accountClaims, body: { subscription, domainName } });
  if (res.status !== 201) throw new Error(`subscribe failed: ${JSON.stringify(res.body)}`);
  return subscription;
}
const anaPhone = await device(anaClaims, acme);
const gusPhone = await device(gusClaims, globex);

async function pushed(subscription: BrowserSubscription): Promise<Notification[]> {
  const messages = await push.messages(subscription.clientHash);
  return messages.map((m) => {
    const parsed = parseNotification(m);
    if (!parsed.ok) throw new Error(`push payload is not the notification schema: ${parsed.errors.join('; ')}`);
    return parsed.notification;
  });
}

async function published(count: number): Promise<Notification[]> {
  await waitFor(`${count} notifications on the channel`, () => channel.raw.length >= count);
  return channel.raw.map((raw) => {
    const parsed = parseNotification(raw);
    if (!parsed.ok) throw new Error(parsed.errors.join('; '));
    return parsed.notification;
  });
}

t.test('a system subject reaches every domain of the building: one notification per domain, pushes per domain', async (t) => {
  const res = await call(h.url, 'POST', '/trigger', { claims: twinClaims, body: { buildingId: shared, title: 'Provisioning failed', message: 'Building setup did not finish' } });
  t.same(res, { status: 200, body: { domains: [acme, globex], inApp: 2, push: 2 } });
  const notes = await published(2);
  t.same(notes.map((n) => n.domainName).sort(), [acme, globex].sort());
  t.match(notes[0], { kind: 'manual', severity: 'danger', title: 'Provisioning failed', message: 'Building setup did not finish', buildingId: shared });
  const [anaGot] = await pushed(anaPhone);
  const [gusGot] = await pushed(gusPhone);
  t.match(anaGot, { kind: 'manual', severity: 'danger', title: 'Provisioning failed', domainName: acme, buildingId: shared }, 'ana’s browser decrypts the acme notification');
  t.match(gusGot, { domainName: globex }, 'gus’s browser decrypts the globex notification');
  t.same(directory.calls.at(-1), { buildingId: shared, claims: twinClaims }, 'the lookup forwards the caller’s claims');
});

t.test('an admin reaches every domain of the building', async (t) => {
  const res = await call(h.url, 'POST', '/trigger', { claims: adminClaims, body: { buildingId: shared, type: 'warning' } });
  t.same(res, { status: 200, body: { domains: [acme, globex], inApp: 2, push: 2 } });
  const notes = (await published(4)).slice(2);
  t.same(notes.map((n) => n.severity), ['warning', 'warning']);
  t.equal((await pushed(anaPhone)).length, 2);
});

t.test('a member reaches only the building’s domains that are theirs', async (t) => {
  const res = await call(h.url, 'POST', '/trigger', { claims: anaClaims, body: { buildingId: shared, type: 'info', message: 'Fire drill at noon' } });
  t.same(res, { status: 200, body: { domains: [acme], inApp: 1, push: 1 } });
  const notes = (await published(5)).slice(4);
  t.match(notes, [{ domainName: acme, severity: 'info', message: 'Fire drill at noon' }]);
  t.equal((await pushed(anaPhone)).length, 3, 'ana’s device got it');
  t.equal((await pushed(gusPhone)).length, 2, 'gus (globex) got nothing');
});

t.test('a member of none of the building’s domains gets 403 and nothing is sent', async (t) => {
  const res = await call(h.url, 'POST', '/trigger', { claims: anaClaims, body: { buildingId: globexOnly } });
  t.equal(res.status, 403);
  t.equal((res.body as { type: string }).type, 'Forbidden');
  t.equal((await pushed(gusPhone)).length, 2);
  t.equal(channel.raw.length, 5);
});

t.test('a building with no domains: one unscoped notification for a system subject or an admin, 404 for a member', async (t) => {
  t.same(await call(h.url, 'POST', '/trigger', { claims: twinClaims, body: { buildingId: bare } }), { status: 200, body: { domains: [], inApp: 1, push: 0 } });
  t.same(await call(h.url, 'POST', '/trigger', { claims: adminClaims, body: { buildingId: bare } }), { status: 200, body: { domains: [], inApp: 1, push: 0 } });
  const notes = (await published(7)).slice(5);
  t.equal(notes.length, 2);
  for (const n of notes) t.notOk('domainName' in n, 'unscoped: no domainName');
  t.same(await call(h.url, 'POST', '/trigger', { claims: anaClaims, body: { buildingId: bare } }), {
    status: 404,
    body: { type: 'Not Found', message: 'building has no domains' },
  });
  t.equal((await pushed(anaPhone)).length, 3, 'no push for an unscoped notification');
});

t.test('severity and body validation: 400', async (t) => {
  for (const [what, body] of [
    ['unknown severity', { buildingId: shared, type: 'critical' }],
    ['severity not a string', { buildingId: shared, type: 3 }],
    ['no buildingId', { type: 'info' }],
    ['empty buildingId', { buildingId: '' }],
    ['title not a string', { buildingId: shared, title: 5 }],
  ] as const) {
    const res = await call(h.url, 'POST', '/trigger', { claims: twinClaims, body });
    t.equal(res.status, 400, what);
    t.equal((res.body as { type: string }).type, 'Validation Error', what);
  }
  t.equal(channel.raw.length, 7, 'nothing published');
});

t.test('a directory that never answers: 500 after the 2 s lookup timeout; a failing one: 500', async (t) => {
  const hanging = uniqueName('b-hang');
  const failing = uniqueName('b-fail');
  directory.set(hanging, 'hang').set(failing, { status: 503 });
  const timedOut = await call(h.url, 'POST', '/trigger', { claims: twinClaims, body: { buildingId: hanging } });
  t.same(timedOut, { status: 500, body: { type: 'Internal Server Error', message: 'building lookup failed' } });
  const failed = await call(h.url, 'POST', '/trigger', { claims: anaClaims, body: { buildingId: failing } });
  t.same(failed, { status: 500, body: { type: 'Internal Server Error', message: 'building lookup failed' } });
  t.equal(await counterValue(h.metrics, 'notification_directory_failures_total', { code: 'timeout' }), 1);
  t.equal(await counterValue(h.metrics, 'notification_directory_failures_total', { code: 'bad_status' }), 1);
  t.equal(channel.raw.length, 7, 'nothing published');
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
