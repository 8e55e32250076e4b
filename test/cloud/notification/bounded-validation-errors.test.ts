/**
 * Validation errors stay small whatever the body. A list longer than it can meaningfully be, or an object
 * with more keys than any route reads, is refused with one problem naming the limit before any element
 * is checked (a 0.95 MiB `types:[0,0,…]` once answered with a 93.7 MiB body), and an answer reports at
 * most 20 problems, as every service's does.
 */
import t, { type Test } from 'tap';
import { ALERTABLE_METRICS } from '../../../shared/catalog/metrics.js';
import { MAX_REPORTED_PROBLEMS } from '../../../shared/errors.js';
import { MAX_KEYS, MAX_PREFERENCE_ENTRIES } from '../../../cloud/notification/requests.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { call, claims, startHarness } from './support/harness.js';
import { startPushService } from './support/push-service.js';
import { uniqueName } from './support/stack.js';

const directory = await startFakeDirectory(t);
const push = await startPushService(t);
const h = await startHarness(t, { directory });
const acme = uniqueName('acme');
const ana = uniqueName('ana');
const anaClaims = claims(`sub-${ana}`, ana, [{ domainName: acme, role: 'member' }]);
const device = await push.subscribe(h.vapid!.publicKey);

/** Posts a raw JSON body and checks the answer is a small 400 holding exactly the one expected problem. */
async function refusedSmall(t: Test, path: string, rawBody: string, problem: string): Promise<void> {
  const res = await call(h.url, 'POST', path, { claims: anaClaims, rawBody });
  t.equal(res.status, 400, `${path} answers 400`);
  t.same(res.body, { type: 'Validation Error', message: problem, errors: [problem] }, problem);
  const size = JSON.stringify(res.body).length;
  t.ok(size < 1024, `the answer is small (${size} characters for a ${rawBody.length}-character body)`);
}

function withUnknownKeys(body: object, count: number): string {
  const crowded: Record<string, unknown> = { ...body };
  for (let i = 0; i < count; i++) crowded[`unknown${i}`] = 0;
  return JSON.stringify(crowded);
}

const typesLimit = `expected a list of at most ${ALERTABLE_METRICS.length} alertable metrics (${ALERTABLE_METRICS.join(', ')})`;

t.test('a 0.95 MiB types list is refused with one problem naming the limit', async (t) => {
  const huge = `[${new Array<string>(480_000).fill('0').join(',')}]`;
  t.ok(huge.length > 0.9 * 1024 * 1024, 'the list is close to the body limit');
  await refusedSmall(t, '/preferences', `{"domainName":${JSON.stringify(acme)},"types":${huge},"enabled":true}`, `types: ${typesLimit}, got 480000 elements`);
  await refusedSmall(t, '/subscribe', `{"subscription":${JSON.stringify(device)},"domainName":${JSON.stringify(acme)},"types":${huge}}`, `types: ${typesLimit}, got 480000 elements`);
});

t.test('types one longer than the alertable metrics is refused; as long as them is accepted', async (t) => {
  const all = [...ALERTABLE_METRICS];
  const over = [...all, all[0]];
  await refusedSmall(t, '/preferences', JSON.stringify({ domainName: acme, types: over, enabled: true }), `types: ${typesLimit}, got ${over.length} elements`);
  const res = await call(h.url, 'POST', '/preferences', { claims: anaClaims, body: { domainName: acme, types: all, enabled: true } });
  t.equal(res.status, 200);
});

t.test(`a preferences list longer than ${MAX_PREFERENCE_ENTRIES} entries is refused; ${MAX_PREFERENCE_ENTRIES} entries are accepted`, async (t) => {
  const entries = (n: number) => Array.from({ length: n }, (_, i) => ({ notificationType: ALERTABLE_METRICS[i % ALERTABLE_METRICS.length], isSubscribed: i % 2 === 0 }));
  await refusedSmall(
    t,
    '/preferences',
    JSON.stringify({ domainName: acme, preferences: new Array(40_000).fill(0) }),
    `preferences: expected a list of at most ${MAX_PREFERENCE_ENTRIES} {notificationType, isSubscribed}, got 40000 elements`,
  );
  await refusedSmall(
    t,
    '/preferences',
    JSON.stringify({ domainName: acme, preferences: entries(MAX_PREFERENCE_ENTRIES + 1) }),
    `preferences: expected a list of at most ${MAX_PREFERENCE_ENTRIES} {notificationType, isSubscribed}, got ${MAX_PREFERENCE_ENTRIES + 1} elements`,
  );
  const res = await call(h.url, 'POST', '/preferences', { claims: anaClaims, body: { domainName: acme, preferences: entries(MAX_PREFERENCE_ENTRIES) } });
  t.equal(res.status, 200, 'a repeated type is allowed within the limit; the last entry wins');
});

t.test('a body with thousands of unknown keys is refused on every route with one problem naming the limit', async (t) => {
  const problem = `(root): expected an object with at most ${MAX_KEYS} keys, got ${5000 + 3} keys`;
  await refusedSmall(t, '/subscribe', withUnknownKeys({ subscription: device, domainName: acme, types: ['temperature'] }, 5000), problem);
  await refusedSmall(t, '/preferences', withUnknownKeys({ domainName: acme, type: 'temperature', enabled: true }, 5000), problem);
  await refusedSmall(t, '/trigger', withUnknownKeys({ buildingId: 'b1', title: 'x', message: 'y' }, 5000), problem);
});

t.test('nested objects with thousands of keys are refused the same way', async (t) => {
  await refusedSmall(
    t,
    '/subscribe',
    JSON.stringify({ subscription: JSON.parse(withUnknownKeys(device, 5000)) as unknown }),
    `subscription: expected an object with at most ${MAX_KEYS} keys, got ${5000 + 3} keys`,
  );
  await refusedSmall(
    t,
    '/subscribe',
    JSON.stringify({ subscription: { endpoint: device.endpoint, keys: JSON.parse(withUnknownKeys(device.keys, 5000)) as unknown } }),
    `subscription.keys: expected an object with at most ${MAX_KEYS} keys, got ${5000 + 2} keys`,
  );
  await refusedSmall(
    t,
    '/preferences',
    JSON.stringify({ domainName: acme, preferences: [JSON.parse(withUnknownKeys({ notificationType: 'temperature', isSubscribed: true }, 5000)) as unknown] }),
    `preferences[0]: expected an object with at most ${MAX_KEYS} keys, got ${5000 + 2} keys`,
  );
});

t.test(`a few unknown keys are still ignored (up to ${MAX_KEYS} keys in all)`, async (t) => {
  const res = await call(h.url, 'POST', '/preferences', { claims: anaClaims, rawBody: withUnknownKeys({ domainName: acme, type: 'temperature', enabled: true }, MAX_KEYS - 3) });
  t.equal(res.status, 200);
});

t.test(`an answer reports at most ${MAX_REPORTED_PROBLEMS} problems, then how many more there were`, async (t) => {
  // Every entry of the longest list allowed is wrong twice: twice as many problems as the answer shows.
  const preferences = Array.from({ length: MAX_PREFERENCE_ENTRIES }, (_, i) => ({ notificationType: `nope-${i}`, isSubscribed: 'yes' }));
  const res = await call(h.url, 'POST', '/preferences', { claims: anaClaims, body: { domainName: acme, preferences } });
  t.equal(res.status, 400);
  const errors = (res.body as { errors: string[] }).errors;
  t.equal(errors.length, MAX_REPORTED_PROBLEMS + 1);
  t.match(errors[0], /^preferences\[0\]/);
  t.equal(errors[MAX_REPORTED_PROBLEMS], `and ${2 * MAX_PREFERENCE_ENTRIES - MAX_REPORTED_PROBLEMS} more`);
  t.equal((res.body as { message: string }).message, errors.join('; '));
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
