/**
 * A page on another site can make the user's browser POST to the notification service with the user's
 * claims (the mesh builds them from the cookie). Browsers mark such requests `Sec-Fetch-Site:
 * cross-site`, or give them `Origin: null`: against the real FerretDB, they must change nothing.
 */
import t from 'tap';
import { request } from 'undici';
import { COLLECTIONS } from '../../../cloud/notification/store.js';
import { jsonOrText } from '../../support/http.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { member, startHarness } from './support/harness.js';
import { uniqueName } from './support/stack.js';

const CROSS_SITE_MARKS: Array<Record<string, string>> = [
  { 'sec-fetch-site': 'cross-site', origin: 'https://attacker.example' },
  { origin: 'null' },
];

// First: the fake directory fails the test at teardown on any lookup, and no test here sets one up.
const directory = await startFakeDirectory(t);
const h = await startHarness(t, { directory });

async function post(path: string, claims: string, body: unknown, marks: Record<string, string>): Promise<{ status: number; body: unknown }> {
  const response = await request(`${h.url}${path}`, {
    method: 'POST',
    headers: { 'x-gateway-claims': claims, 'content-type': 'application/json', ...marks },
    body: JSON.stringify(body),
  });
  return { status: response.statusCode, body: jsonOrText(await response.body.text()) };
}

t.test('POST /preferences from another site is 403 and stores nothing; from the same site it stores', async (t) => {
  const acme = uniqueName('acme');
  const ana = member(acme, 'ana');
  const change = { domainName: acme, type: 'temperature', enabled: false };
  for (const marks of CROSS_SITE_MARKS) {
    const refused = await post('/preferences', ana.header, change, marks);
    t.equal(refused.status, 403, JSON.stringify(marks));
    t.match(refused.body, { type: 'Forbidden', message: /^cross-site request refused/ });
  }
  const preferences = h.db.collection(COLLECTIONS.preferences);
  t.equal(await preferences.countDocuments({ accountName: ana.account }), 0, 'no preferences record was written');

  const own = await post('/preferences', ana.header, change, { 'sec-fetch-site': 'same-origin', origin: 'https://app.lintel.build' });
  t.equal(own.status, 200, 'the app itself changes the preference');
  const sibling = await post('/preferences', ana.header, { ...change, type: 'airQuality' }, { 'sec-fetch-site': 'same-site' });
  t.equal(sibling.status, 200, 'so does a frontend on a sibling host of the same site');
  const record = await preferences.findOne({ accountName: ana.account, domainName: acme });
  t.match(record?.preferences, [
    { notificationType: 'temperature', isSubscribed: false },
    { notificationType: 'airQuality', isSubscribed: false },
  ]);
});

t.test('POST /trigger from another site is 403 before any building lookup', async (t) => {
  const ana = member(uniqueName('acme'), 'ana');
  for (const marks of CROSS_SITE_MARKS) {
    const refused = await post('/trigger', ana.header, { buildingId: 'b-cross-site', title: 'Evacuate' }, marks);
    t.equal(refused.status, 403, JSON.stringify(marks));
    t.match(refused.body, { type: 'Forbidden', message: /^cross-site request refused/ });
  }
  t.same(directory.unexpected, [], 'the directory was never asked');
});
