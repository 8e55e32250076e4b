/**
 * GET /preferences/{accountName} ignores its path parameter, as the seed has it: the account comes from
 * the claims. Express decoded the parameter while matching the route, so a path that is not valid
 * percent-encoding (`ana%zz@acme.test`) answered 400, with valid claims and without any (not 401).
 */
import t from 'tap';
import { startFakeDirectory } from './support/fake-directory.js';
import { call, claims, startHarness } from './support/harness.js';
import { uniqueName } from './support/stack.js';

const directory = await startFakeDirectory(t);
const h = await startHarness(t, { directory });
const acme = uniqueName('acme');
const ana = uniqueName('ana');
const anaClaims = claims(`sub-${ana}`, ana, [{ domainName: acme, role: 'member' }]);
const saved = await call(h.url, 'POST', '/preferences', { claims: anaClaims, body: { domainName: acme, type: 'temperature', enabled: true } });

t.test('a path that is not valid percent-encoding answers the caller’s own records', async (t) => {
  t.equal(saved.status, 200);
  for (const path of ['/preferences/ana%zz@acme.test', '/preferences/%E0%A4%A', '/preferences/%', '/preferences/someone-else', '/Preferences/ana%zz/']) {
    const res = await call(h.url, 'GET', path, { claims: anaClaims });
    t.equal(res.status, 200, path);
    t.match(res.body, [{ accountName: ana, domainName: acme, preferences: [{ notificationType: 'temperature', isSubscribed: true }] }], path);
    t.equal((res.body as unknown[]).length, 1, `${path}: only her record`);
  }
});

t.test('without claims the same paths are 401', async (t) => {
  for (const path of ['/preferences/ana%zz@acme.test', '/preferences/%']) {
    const res = await call(h.url, 'GET', path);
    t.equal(res.status, 401, path);
    t.match(res.body, { type: 'Unauthorized' }, path);
  }
});

t.test('no account in the path is still no route', async (t) => {
  t.equal((await call(h.url, 'GET', '/preferences/', { claims: anaClaims })).status, 404);
  t.equal((await call(h.url, 'GET', '/preferences/a/b', { claims: anaClaims })).status, 404);
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
