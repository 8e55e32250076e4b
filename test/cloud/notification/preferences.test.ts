/**
 * POST /subscribe, POST /preferences and GET /preferences/{accountName} against a real FerretDB, with
 * browser-like subscriptions from a real push service. Guards every preference form and its 400/403,
 * the domainId alias, the account coming only from the claims, and 401 for claims without accountName.
 */
import t from 'tap';
import { COLLECTIONS } from '../../../cloud/notification/store.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { call, claims, startHarness } from './support/harness.js';
import { startPushService } from './support/push-service.js';
import { uniqueName } from './support/stack.js';

const directory = await startFakeDirectory(t);
const push = await startPushService(t);
const h = await startHarness(t, { directory });

const acme = uniqueName('acme');
const globex = uniqueName('globex');
const ana = uniqueName('ana');
const anaClaims = claims(`sub-${ana}`, ana, [{ domainName: acme, role: 'member' }]);

async function recordOf(account: string, domainName: string) {
  return h.db.collection(COLLECTIONS.preferences).findOne({ accountName: account, domainName });
}

t.test('claims without accountName, or no claims, are refused with 401 on every private route', async (t) => {
  const noName = claims('sub-x', undefined, [{ domainName: acme, role: 'member' }]);
  for (const [method, path] of [
    ['POST', '/subscribe'],
    ['POST', '/preferences'],
    ['GET', '/preferences/someone'],
    ['POST', '/trigger'],
  ] as const) {
    for (const header of [noName, undefined, 'not base64!']) {
      const res = await call(h.url, method, path, { claims: header, body: {} });
      t.equal(res.status, 401, `${method} ${path} with ${header === noName ? 'no accountName' : 'bad claims'}`);
      t.equal((res.body as { type: string }).type, 'Unauthorized');
    }
  }
  t.equal((await call(h.url, 'GET', '/health')).status, 200, '/health is public');
  t.equal((await call(h.url, 'GET', '/metrics')).status, 200, '/metrics is public');
  const key = await call(h.url, 'GET', '/public-key');
  t.same(key, { status: 200, body: { publicVapidKey: h.vapid?.publicKey } }, '/public-key is public and gives the VAPID key');
});

t.test('POST /subscribe stores the device; with a domain every alertable metric is on', async (t) => {
  const device = await push.subscribe(h.vapid!.publicKey);
  const res = await call(h.url, 'POST', '/subscribe', {
    claims: anaClaims,
    body: { subscription: { endpoint: device.endpoint, keys: device.keys, expirationTime: null }, domainName: acme, accountName: 'mallory' },
  });
  t.equal(res.status, 201);
  const stored = await h.db.collection(COLLECTIONS.devices).findOne({ endpoint: device.endpoint });
  t.equal(stored?.accountName, ana, 'the account comes from the claims, not the body');
  t.same(stored?.keys, device.keys);
  const record = await recordOf(ana, acme);
  t.same(record?.preferences, [
    { notificationType: 'temperature', isSubscribed: true },
    { notificationType: 'peopleCount', isSubscribed: true },
    { notificationType: 'airQuality', isSubscribed: true },
  ]);
  t.type(record?.createdAt, 'string');
  t.equal(await h.db.collection(COLLECTIONS.preferences).countDocuments({ accountName: 'mallory' }), 0);
});

t.test('POST /subscribe with named types switches on only those; a second device of the same account is kept apart', async (t) => {
  const bob = uniqueName('bob');
  const bobClaims = claims(`sub-${bob}`, bob, [{ domainName: acme, role: 'viewer' }]);
  const [one, two] = [await push.subscribe(h.vapid!.publicKey), await push.subscribe(h.vapid!.publicKey)];
  t.equal((await call(h.url, 'POST', '/subscribe', { claims: bobClaims, body: { subscription: one, domainId: acme, types: ['airQuality'] } })).status, 201);
  t.equal((await call(h.url, 'POST', '/subscribe', { claims: bobClaims, body: { subscription: two } })).status, 201);
  t.same((await recordOf(bob, acme))?.preferences, [{ notificationType: 'airQuality', isSubscribed: true }], 'domainId is an alias of domainName');
  t.equal(await h.db.collection(COLLECTIONS.devices).countDocuments({ accountName: bob }), 2);
});

t.test('POST /subscribe to a domain the caller is not in: 403, and the device is still stored', async (t) => {
  const device = await push.subscribe(h.vapid!.publicKey);
  const res = await call(h.url, 'POST', '/subscribe', { claims: anaClaims, body: { subscription: device, domainName: globex } });
  t.equal(res.status, 403);
  t.equal((res.body as { type: string }).type, 'Forbidden');
  t.equal((await h.db.collection(COLLECTIONS.devices).findOne({ endpoint: device.endpoint }))?.accountName, ana);
  t.equal(await recordOf(ana, globex), null, 'no preferences record in the refused domain');
});

t.test('POST /subscribe refuses a malformed push subscription or a non-alertable type with 400, storing nothing', async (t) => {
  const device = await push.subscribe(h.vapid!.publicKey);
  const cases: Array<[string, unknown]> = [
    ['no subscription', { domainName: acme }],
    ['endpoint not a URL', { subscription: { ...device, endpoint: 'nope' } }],
    ['endpoint not http(s)', { subscription: { ...device, endpoint: 'ftp://127.0.0.1/x' } }],
    ['p256dh not a P-256 key', { subscription: { ...device, keys: { ...device.keys, p256dh: 'abc' } } }],
    // 65 bytes in the uncompressed form, but not a point on the curve: no push could ever be encrypted for it.
    ['p256dh off the P-256 curve', { subscription: { ...device, keys: { ...device.keys, p256dh: Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 1)]).toString('base64url') } } }],
    ['auth missing', { subscription: { endpoint: device.endpoint, keys: { p256dh: device.keys.p256dh } } }],
    ['non-alertable type', { subscription: device, domainName: acme, types: ['apClients'] }],
    ['empty types', { subscription: device, domainName: acme, types: [] }],
    ['domainName empty', { subscription: device, domainName: ' ' }],
    ['domainName and domainId disagree', { subscription: device, domainName: acme, domainId: globex }],
  ];
  for (const [what, body] of cases) {
    const res = await call(h.url, 'POST', '/subscribe', { claims: anaClaims, body });
    t.equal(res.status, 400, what);
    t.equal((res.body as { type: string }).type, 'Validation Error', what);
  }
  t.equal(await h.db.collection(COLLECTIONS.devices).countDocuments({ endpoint: device.endpoint }), 0);
  const bad = await call(h.url, 'POST', '/subscribe', { claims: anaClaims, rawBody: '{"subscription":' });
  t.same(bad, { status: 400, body: { type: 'Validation Error', message: 'request body is not valid JSON' } });
});

t.test('POST /preferences: all three forms; a type write replaces that entry; the first write creates the record', async (t) => {
  const cara = uniqueName('cara');
  const caraClaims = claims(`sub-${cara}`, cara, [{ domainName: acme, role: 'member' }]);
  const single = await call(h.url, 'POST', '/preferences', { claims: caraClaims, body: { domainName: acme, type: 'temperature', enabled: true, userId: 'mallory' } });
  t.equal(single.status, 200, 'single {type, enabled} creates the record');
  t.match(single.body, { accountName: cara, domainName: acme, preferences: [{ notificationType: 'temperature', isSubscribed: true }] });
  const created = (await recordOf(cara, acme))?.createdAt;

  const list = await call(h.url, 'POST', '/preferences', { claims: caraClaims, body: { domainId: acme, types: ['peopleCount', 'temperature'], enabled: false } });
  t.equal(list.status, 200, 'types list with one enabled');
  t.same((list.body as { preferences: unknown }).preferences, [
    { notificationType: 'temperature', isSubscribed: false },
    { notificationType: 'peopleCount', isSubscribed: false },
  ]);

  const granular = await call(h.url, 'POST', '/preferences', {
    claims: caraClaims,
    body: { domainName: acme, preferences: [{ notificationType: 'airQuality', isSubscribed: true }, { notificationType: 'peopleCount', isSubscribed: true }] },
  });
  t.equal(granular.status, 200, 'granular preferences list');
  const record = await recordOf(cara, acme);
  t.same(record?.preferences, [
    { notificationType: 'temperature', isSubscribed: false },
    { notificationType: 'peopleCount', isSubscribed: true },
    { notificationType: 'airQuality', isSubscribed: true },
  ]);
  t.equal(record?.createdAt, created, 'createdAt is kept across writes');
  t.equal(await h.db.collection(COLLECTIONS.preferences).countDocuments({ accountName: cara }), 1, 'one record per (account, domain)');
});

t.test('POST /preferences: concurrent writes of different types to one record all land', async (t) => {
  const dan = uniqueName('dan');
  const danClaims = claims(`sub-${dan}`, dan, [{ domainName: acme, role: 'member' }]);
  const results = await Promise.all(
    ['temperature', 'peopleCount', 'airQuality', 'temperature'].map((type, i) =>
      call(h.url, 'POST', '/preferences', { claims: danClaims, body: { domainName: acme, type, enabled: i % 2 === 0 } }),
    ),
  );
  t.same(results.map((r) => r.status), [200, 200, 200, 200]);
  const record = await recordOf(dan, acme);
  t.equal(record?.preferences.length, 3, 'one entry per type, none lost');
  t.same(new Set(record?.preferences.map((p: { notificationType: string }) => p.notificationType)), new Set(['temperature', 'peopleCount', 'airQuality']));
});

t.test('POST /preferences: 400 for every malformed form, 403 for a domain the caller is not in', async (t) => {
  const cases: Array<[string, unknown]> = [
    ['non-alertable type', { domainName: acme, type: 'apClients', enabled: true }],
    ['unknown type', { domainName: acme, type: 'humidity', enabled: true }],
    ['types with a non-alertable type', { domainName: acme, types: ['temperature', 'zoneTransition'], enabled: true }],
    ['granular with a non-alertable type', { domainName: acme, preferences: [{ notificationType: 'totalDeviceCount', isSubscribed: true }] }],
    ['enabled not a boolean', { domainName: acme, type: 'temperature', enabled: 'yes' }],
    ['types without enabled', { domainName: acme, types: ['temperature'] }],
    ['isSubscribed missing', { domainName: acme, preferences: [{ notificationType: 'temperature' }] }],
    ['empty types', { domainName: acme, types: [], enabled: true }],
    ['no form', { domainName: acme }],
    ['two forms', { domainName: acme, type: 'temperature', types: ['temperature'], enabled: true }],
    ['no domainName', { type: 'temperature', enabled: true }],
    ['not an object', ['temperature']],
  ];
  for (const [what, body] of cases) {
    const res = await call(h.url, 'POST', '/preferences', { claims: anaClaims, body });
    t.equal(res.status, 400, what);
    t.equal((res.body as { type: string }).type, 'Validation Error', what);
  }
  const forbidden = await call(h.url, 'POST', '/preferences', { claims: anaClaims, body: { domainName: globex, type: 'temperature', enabled: true } });
  t.same(forbidden, { status: 403, body: { type: 'Forbidden', message: `not a member of domain "${globex}"` } });
  t.equal(await recordOf(ana, globex), null);
  const admin = uniqueName('root');
  const adminClaims = claims(`sub-${admin}`, admin, [{ domainName: uniqueName('ops'), role: 'admin' }]);
  t.equal((await call(h.url, 'POST', '/preferences', { claims: adminClaims, body: { domainName: globex, type: 'temperature', enabled: true } })).status, 200, 'an admin is unrestricted');
});

t.test('GET /preferences/{accountName} answers the caller’s own records whatever the path says', async (t) => {
  const mine = await call(h.url, 'GET', `/preferences/${encodeURIComponent('someone-else')}`, { claims: anaClaims });
  t.equal(mine.status, 200);
  const records = mine.body as Array<{ accountName: string; domainName: string; preferences: unknown[] }>;
  t.same(records.map((r) => [r.accountName, r.domainName]), [[ana, acme]]);
  t.notOk('revision' in (records[0] ?? {}), 'internal fields are not shown');
  const stranger = uniqueName('eve');
  const none = await call(h.url, 'GET', `/preferences/${ana}`, { claims: claims(`sub-${stranger}`, stranger) });
  t.same(none, { status: 200, body: [] }, 'naming another account in the path reads nothing of theirs');
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
