/**
 * A form on another site, posted by the victim's browser, reaches tenancy with the victim's claims (the
 * mesh builds them from the cookie). Browsers mark such a request `Sec-Fetch-Site: cross-site`, or give
 * it `Origin: null` from a sandboxed frame: it must change nothing. The app's own pages, and clients
 * that send neither mark, keep working.
 */
import t from 'tap';
import { createDomain, newAccount, startTenancy, uniqueDomain, type Answer, type TenancyUnderTest } from './support/harness.js';

const CROSS_SITE_MARKS: Array<Record<string, string>> = [
  { 'sec-fetch-site': 'cross-site', origin: 'https://attacker.example' },
  { origin: 'null' },
];

/** A bodiless `<form method=POST>` as a browser sends it, with the claims the mesh adds from the cookie. */
function formPost(app: TenancyUnderTest, path: string, sub: string, marks: Record<string, string>): Promise<Answer> {
  return app.call('POST', path, { as: { sub }, body: '', headers: { 'content-type': 'application/x-www-form-urlencoded', ...marks } });
}

async function membershipsIn(app: TenancyUnderTest, domain: string, account: string): Promise<number> {
  const { rows } = await app.pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM memberships m JOIN domains d ON d.id = m.domain_id WHERE d.name = $1 AND m.account_id = $2',
    [domain, account],
  );
  return rows[0]?.n ?? 0;
}

t.test('POST /domains/:domain/join from another site is 403 and adds no membership; from the same site it joins', async (t) => {
  const app = await startTenancy(t);
  const domain = uniqueDomain('open');
  await createDomain(app, newAccount(), { name: domain, joinPolicy: 'open-via-idp' });
  const victim = newAccount();
  for (const marks of CROSS_SITE_MARKS) {
    const refused = await formPost(app, `/domains/${domain}/join`, victim, marks);
    t.equal(refused.status, 403, JSON.stringify(marks));
    t.match(refused.json, { type: 'Forbidden', message: /^cross-site request refused/ });
  }
  t.equal(await membershipsIn(app, domain, victim), 0, 'the victim joined nothing');

  const sameOrigin = await formPost(app, `/domains/${domain}/join`, victim, { 'sec-fetch-site': 'same-origin', origin: 'https://app.lintel.build' });
  t.equal(sameOrigin.status, 201, 'the app itself may join');
  const sameSite = await formPost(app, `/domains/${domain}/join`, newAccount(), { 'sec-fetch-site': 'same-site' });
  t.equal(sameSite.status, 201, 'so may a frontend on a sibling host of the same site');
  const unmarked = await app.call('POST', `/domains/${domain}/join`, { as: { sub: newAccount() } });
  t.equal(unmarked.status, 201, 'a client without the browser marks is not refused');
  t.equal(await membershipsIn(app, domain, victim), 1);
});

t.test('POST /invite-codes/:code/redeem from another site is 403 and leaves the code unused', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  const domain = uniqueDomain('acme');
  await createDomain(app, owner, { name: domain });
  const created = await app.call('POST', `/domains/${domain}/invite-codes`, { as: { sub: owner, memberships: [{ domainName: domain, role: 'business_admin' }] }, body: { role: 'member' } });
  t.equal(created.status, 201);
  const { code } = created.json as { code: string };
  const victim = newAccount();
  for (const marks of CROSS_SITE_MARKS) {
    const refused = await formPost(app, `/invite-codes/${code}/redeem`, victim, marks);
    t.equal(refused.status, 403, JSON.stringify(marks));
    t.match(refused.json, { type: 'Forbidden', message: /^cross-site request refused/ });
  }
  t.equal(await membershipsIn(app, domain, victim), 0, 'the victim joined nothing');
  const { rows } = await app.pool.query<{ redeemed_by: string | null }>('SELECT redeemed_by FROM invite_codes WHERE code = $1', [code]);
  t.equal(rows[0]?.redeemed_by, null, 'the code is still unused');

  const redeemed = await formPost(app, `/invite-codes/${code}/redeem`, victim, { 'sec-fetch-site': 'same-origin' });
  t.equal(redeemed.status, 201, 'the owner of the code redeems it from the app');
  t.equal(await membershipsIn(app, domain, victim), 1);
});

t.test('reads are not refused, whatever their marks', async (t) => {
  const app = await startTenancy(t);
  const mine = await app.call('GET', '/me/memberships', { as: { sub: newAccount() }, headers: { 'sec-fetch-site': 'cross-site', origin: 'null' } });
  t.equal(mine.status, 200);
  t.same(mine.json, []);
});
