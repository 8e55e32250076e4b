/**
 * SSRF through Web Push endpoints. With WEB_PUSH_ALLOW_PRIVATE_DESTINATIONS off, /subscribe refuses an
 * endpoint on a private IP literal, and a push to a host that is or resolves to a private address
 * (a name like localhost, or a literal stored before the check existed) never leaves the service: the
 * loopback server behind it is never called, /trigger reports push 0, and the failure is counted as
 * `forbidden_destination` with the subscription kept. With the allowance on, the same server is reached.
 * That server is a fake push host (support/fake-push-host.ts): it takes only well-formed Web Push
 * requests to the subscribed paths and fails the test on anything else.
 */
import t from 'tap';
import { isPrivateAddress } from '../../../cloud/notification/destinations.js';
import { COLLECTIONS } from '../../../cloud/notification/store.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { startFakePushHost } from './support/fake-push-host.js';
import { browserKeys, call, claims, counterValue, member, newVapid, startHarness } from './support/harness.js';
import { uniqueName } from './support/stack.js';
import { capturedLogger } from '../../support/captured-logger.js';

const directory = await startFakeDirectory(t);
const twin = claims('system:digital-twin', 'digital-twin');

t.test('isPrivateAddress: loopback, RFC 1918, link-local, unique-local, unspecified and their IPv4-mapped forms', async (t) => {
  const refused = [
    '127.0.0.1', '127.255.255.254', '10.0.0.7', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254',
    '0.0.0.0', '100.64.0.1', '224.0.0.1', '255.255.255.255',
    '::', '::1', 'fe80::1', 'febf:ffff::1', 'fc00::1', 'fd12:3456::1', 'ff02::1',
    '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:169.254.169.254', '::ffff:10.0.0.1', '::ffff:192.168.0.1', '64:ff9b::a9fe:a9fe',
  ];
  const allowed = ['8.8.8.8', '172.32.0.1', '192.169.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', 'localhost', 'push.example.com'];
  for (const address of refused) t.equal(isPrivateAddress(address), true, `${address} is private`);
  for (const address of allowed) t.equal(isPrivateAddress(address), false, `${address} is not a private address`);
});

t.test('allowance off: /subscribe refuses an endpoint on a private IP literal with 400 naming the address, storing nothing', async (t) => {
  const h = await startHarness(t, { directory, allowPrivateDestinations: false });
  const acme = uniqueName('acme');
  const ana = member(acme, 'ana');
  const keys = browserKeys();
  const cases: Array<[string, string]> = [
    ['https://169.254.169.254/latest/meta-data', '169.254.169.254'],
    ['https://127.0.0.1/x', '127.0.0.1'],
    ['https://10.0.0.7:8443/x', '10.0.0.7'],
    ['http://192.168.1.1:8080/x', '192.168.1.1'],
    ['https://[::1]/x', '::1'],
    ['https://[fd00::1]/x', 'fd00::1'],
    ['https://[fe80::1]/x', 'fe80::1'],
    ['https://0.0.0.0/x', '0.0.0.0'],
    ['https://[::ffff:169.254.169.254]/x', '::ffff:a9fe:a9fe'],
    ['https://0x7f.1/x', '127.0.0.1'],
    ['https://2130706433/x', '127.0.0.1'],
  ];
  for (const [endpoint, address] of cases) {
    const res = await call(h.url, 'POST', '/subscribe', { claims: ana.header, body: { subscription: { endpoint, keys }, domainName: acme } });
    t.equal(res.status, 400, endpoint);
    t.match(res.body, { type: 'Validation Error', message: `subscription.endpoint: expected a push service on a public address, got the private address ${address}` }, endpoint);
  }
  t.equal(await h.db.collection(COLLECTIONS.devices).countDocuments({}), 0, 'no device stored');
  t.equal(await h.db.collection(COLLECTIONS.preferences).countDocuments({}), 0, 'no preferences stored');
  const named = await call(h.url, 'POST', '/subscribe', { claims: ana.header, body: { subscription: { endpoint: 'https://push.example.com/x', keys } } });
  t.equal(named.status, 201, 'a host name is accepted; it is checked when a push connects');
});

t.test('allowance off: a push to a private destination never leaves; /trigger reports push 0 and counts forbidden_destination', async (t) => {
  const { logger, text: logs } = capturedLogger('notification');
  const vapid = newVapid();
  // Started before the harness, so its check of unexpected requests runs after the harness drained.
  const trap = await startFakePushHost(t, { vapidPublicKey: vapid.publicKey });
  const h = await startHarness(t, {
    directory,
    vapid,
    allowPrivateDestinations: false,
    logger,
  });
  const metricsBefore = String((await call(h.url, 'GET', '/metrics')).body);
  t.match(metricsBefore, /notification_push_failed_total\{reason="forbidden_destination",service="notification"\} 0/, 'the reason is zero-initialised');
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  directory.set(building, [acme]);
  const ana = member(acme, 'ana');
  const keys = browserKeys();
  // A host name passes /subscribe and resolves to loopback only when the push connects.
  const byName = trap.subscribe('/push/by-name', 201, { host: 'localhost' });
  const sub = await call(h.url, 'POST', '/subscribe', { claims: ana.header, body: { subscription: { endpoint: byName, keys }, domainName: acme } });
  t.equal(sub.status, 201);
  // Literals stored before /subscribe refused them are refused at connect time too.
  const storedEarlier = [trap.subscribe('/push/literal', 201), trap.subscribe('/push/mapped', 201, { host: '[::ffff:127.0.0.1]' })];
  for (const endpoint of storedEarlier) t.equal(await h.store.saveDevice(ana.account, { endpoint, keys }), 'saved');

  const res = await call(h.url, 'POST', '/trigger', { claims: twin, body: { buildingId: building, title: 'Probe' } });
  t.same(res, { status: 200, body: { domains: [acme], inApp: 1, push: 0 } });
  t.equal(trap.received, 0, 'the loopback server got no request');
  t.equal(await counterValue(h.metrics, 'notification_push_failed_total', { reason: 'forbidden_destination' }), 3);
  t.equal(await counterValue(h.metrics, 'notification_push_sent_total'), 0);
  t.equal(await counterValue(h.metrics, 'notification_push_removed_total'), 0);
  t.equal(await h.db.collection(COLLECTIONS.devices).countDocuments({ accountName: ana.account }), 3, 'the subscriptions are kept');

  const refused = logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.reason === 'forbidden_destination');
  t.equal(refused.length, 3, 'each refusal is logged');
  t.match(refused[0], { level: 40, msg: 'push failed; subscription kept', detail: /private address/ });
  for (const entry of refused) {
    const line = JSON.stringify(entry);
    t.notOk(['/push/', keys.p256dh, keys.auth].some((secret) => line.includes(secret)), 'the log line holds no endpoint path or device key');
  }
});

t.test('allowance on: the same loopback destinations are reached (local push services)', async (t) => {
  const vapid = newVapid();
  const local = await startFakePushHost(t, { vapidPublicKey: vapid.publicKey });
  const h = await startHarness(t, { directory, vapid, allowPrivateDestinations: true });
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  directory.set(building, [acme]);
  const ana = member(acme, 'ana');
  for (const endpoint of [local.subscribe('/push/a', 201, { host: 'localhost' }), local.subscribe('/push/b', 201)]) {
    const sub = await call(h.url, 'POST', '/subscribe', { claims: ana.header, body: { subscription: { endpoint, keys: browserKeys() }, domainName: acme } });
    t.equal(sub.status, 201, endpoint);
  }
  const res = await call(h.url, 'POST', '/trigger', { claims: twin, body: { buildingId: building } });
  t.same(res.body, { domains: [acme], inApp: 1, push: 2 });
  t.same([...local.calls].sort(), ['/push/a', '/push/b'], 'one well-formed push to each, by name and by literal');
  t.equal(local.received, 2, 'and nothing else');
  t.equal(await counterValue(h.metrics, 'notification_push_failed_total', { reason: 'forbidden_destination' }), 0);
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
