/**
 * POST /subscribe stores an endpoint as its URL's href, on a real FerretDB. An endpoint holding NUL once
 * passed `new URL` and failed the insert (FerretDB on PostgreSQL cannot store NUL): a logged 500. About
 * 2,000 non-ASCII characters exceeded PostgreSQL's btree limit on the unique index: a 500 too. And the
 * unique index held the string as sent, so `https://PUSH.example.com:443/x` (or the endpoint with a tab
 * inside) registered under a second account the push subscription another account held.
 */
import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { COLLECTIONS } from '../../../cloud/notification/store.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { browserKeys, call, member, startHarness } from './support/harness.js';
import { uniqueName } from './support/stack.js';

const directory = await startFakeDirectory(t);
const h = await startHarness(t, { directory });
const devices = h.db.collection(COLLECTIONS.devices);
/** The longest endpoint /subscribe takes, as sent and as its href. */
const MAX_ENDPOINT_LENGTH = 2048;

async function storedAt(endpoint: string) {
  return devices.find({ endpoint }, { projection: { _id: 0, accountName: 1, endpoint: 1, keys: 1 } }).toArray();
}

/** Subscribes `endpoint` and checks it is a 400 naming the endpoint, with nothing stored for the account. */
async function refused(t: Test, endpoint: string, problem: RegExp): Promise<void> {
  const caller = member(uniqueName('acme'));
  const res = await call(h.url, 'POST', '/subscribe', { claims: caller.header, body: { subscription: { endpoint, keys: browserKeys() } } });
  t.equal(res.status, 400);
  t.match(res.body, { type: 'Validation Error', errors: [problem] });
  t.equal(await devices.countDocuments({ accountName: caller.account }), 0, 'nothing stored');
}

t.test('an endpoint holding NUL is a 400 and nothing is stored', async (t) => {
  await refused(t, `https://fcm.googleapis.com/fcm/send/${uniqueName('abc')}\u0000`, /^subscription\.endpoint: expected a URL without control characters/);
});

t.test('other control characters and lone surrogates are refused too', async (t) => {
  for (const odd of ['\t', '\n', '\u0001', '\u007f', '\u0085', '\u2028', '\ud800']) {
    await refused(t, `https://fcm.googleapis.com/fcm/send/${uniqueName('abc')}${odd}x`, /^subscription\.endpoint: expected a URL without control characters/);
  }
});

t.test('non-ASCII characters count as their percent-encoding: 2,000 of them are a 400, not a 500', async (t) => {
  // Varied, as real text is: PostgreSQL compresses an index row of one character repeated under its limit.
  const path = Array.from({ length: 2000 }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919) % 20000))).join('');
  const endpoint = `https://push.example.com/${path}`;
  t.ok(endpoint.length <= MAX_ENDPOINT_LENGTH, 'within the limit as sent');
  await refused(t, endpoint, /^subscription\.endpoint: expected a URL of at most 2048 characters once normalised .*got 18025 characters$/);
});

t.test('an href of exactly the limit is stored; one character more is refused', async (t) => {
  const caller = member(uniqueName('acme'));
  const base = 'https://push.example.com/';
  // Non-ASCII, so the href (percent-encoded) is what reaches the limit, not the string as sent.
  const head = 'é'.repeat(100); // 600 characters once encoded
  // Random, so PostgreSQL cannot compress the index row: the stored href is as long as it can be.
  const tail = randomBytes(MAX_ENDPOINT_LENGTH).toString('base64url');
  const fill = (n: number) => `${base}${head}${tail.slice(0, n - base.length - 600)}`;
  const atLimit = fill(MAX_ENDPOINT_LENGTH);
  t.equal(new URL(atLimit).href.length, MAX_ENDPOINT_LENGTH);
  const res = await call(h.url, 'POST', '/subscribe', { claims: caller.header, body: { subscription: { endpoint: atLimit, keys: browserKeys() } } });
  t.equal(res.status, 201, 'stored: the unique index holds it');
  const href = new URL(atLimit).href;
  t.same(res.body, { subscription: { endpoint: href }, preferences: null }, 'the endpoint answered is the href');
  t.equal((await storedAt(href)).length, 1);
  await refused(t, fill(MAX_ENDPOINT_LENGTH + 1), /got 2049 characters$/);
});

t.test('another spelling of an endpoint held by another account is that endpoint: 409 without its keys', async (t) => {
  const acme = uniqueName('acme');
  const ana = member(acme);
  const mallory = member(acme);
  const capability = uniqueName('cap');
  const endpoint = `https://push.example.com/fcm/send/${capability}`;
  const anaKeys = browserKeys();
  t.equal((await call(h.url, 'POST', '/subscribe', { claims: ana.header, body: { subscription: { endpoint, keys: anaKeys } } })).status, 201);

  for (const spelling of [
    `https://PUSH.example.com/fcm/send/${capability}`,
    `https://push.example.com:443/fcm/send/${capability}`,
    `HTTPS://push.EXAMPLE.com/fcm/send/${capability}#fragment`,
    ` https://push.example.com/fcm/send/${capability} `,
  ]) {
    const res = await call(h.url, 'POST', '/subscribe', { claims: mallory.header, body: { subscription: { endpoint: spelling, keys: browserKeys() }, domainName: acme } });
    t.equal(res.status, 409, spelling);
  }
  t.same(await devices.find({ accountName: mallory.account }).toArray(), [], 'nothing stored for mallory');
  t.same(await storedAt(endpoint), [{ accountName: ana.account, endpoint, keys: anaKeys }], 'ana still holds it, with her keys');
});

t.test('another spelling with the keys of the browser that holds it rebinds the one device (the takeover rule)', async (t) => {
  const ana = member(uniqueName('acme'));
  const bob = member(uniqueName('acme'));
  const capability = uniqueName('cap');
  const endpoint = `https://push.example.com/fcm/send/${capability}`;
  const keys = browserKeys();
  t.equal((await call(h.url, 'POST', '/subscribe', { claims: ana.header, body: { subscription: { endpoint, keys } } })).status, 201);
  const res = await call(h.url, 'POST', '/subscribe', { claims: bob.header, body: { subscription: { endpoint: `https://Push.Example.COM/fcm/send/${capability}`, keys } } });
  t.equal(res.status, 201);
  t.same(res.body, { subscription: { endpoint }, preferences: null });
  t.same(await storedAt(endpoint), [{ accountName: bob.account, endpoint, keys }], 'one device, now bob’s');
  t.equal(await devices.countDocuments({ accountName: ana.account }), 0);
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
