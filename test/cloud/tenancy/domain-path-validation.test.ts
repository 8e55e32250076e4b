import t from 'tap';
import { createDomain, newAccount, startTenancy } from './support/harness.js';
import { capturedLogger } from '../../support/captured-logger.js';

// A platform admin manages every domain, so the policy lets each request through to the lookup.
const platformAdmin = () => ({ sub: newAccount(), memberships: [{ domainName: 'hq', role: 'admin' }] });

t.test('a {domain} that is no domain name (here holding NUL, which PostgreSQL text cannot take) is 404 on every route, never a 500', async (t) => {
  const { logger, lines } = capturedLogger('tenancy-test');
  const app = await startTenancy(t, { logger });
  await createDomain(app, newAccount(), { name: 'acme' });
  const bad = 'ac%00me';
  for (const [method, path, body] of [
    ['POST', `/domains/${bad}/invite`, { accountId: newAccount(), role: 'member' }],
    ['POST', `/domains/${bad}/subdomains`, { name: 'child', displayName: 'Child' }],
    ['POST', `/domains/${bad}/invite-codes`, { role: 'member' }],
    ['POST', `/domains/${bad}/join`, undefined],
    ['GET', `/domains/${bad}/subdomains`, undefined],
    ['DELETE', `/domains/${bad}/members/${newAccount()}`, undefined],
  ] as const) {
    const answer = await app.call(method, path, { as: platformAdmin(), body });
    t.equal(answer.status, 404, `${method} ${path}`);
    t.match(answer.json, { type: 'Not Found', message: /not found/ }, `${method} ${path}`);
  }
  t.same(lines.filter((l) => l.msg === 'unhandled error'), [], 'no request reached the database as an error');
  t.equal(await app.store.findDomain('child'), undefined, 'no subdomain was created');
  const members = await app.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM memberships');
  t.equal(members.rows[0]?.n, 1, 'nobody was added');
});
