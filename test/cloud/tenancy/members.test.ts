import t from 'tap';
import { createDomain, newAccount, startTenancy, type TenancyUnderTest } from './support/harness.js';

const admin = (sub: string, domain: string) => ({ sub, memberships: [{ domainName: domain, role: 'business_admin' }] });

/** A new account stored as admin (a platform administrator) of `hq`, which is created if need be. */
async function storedPlatformAdmin(app: TenancyUnderTest): Promise<string> {
  if (!(await app.store.findDomain('hq'))) await createDomain(app, newAccount(), { name: 'hq' });
  const platform = newAccount();
  await app.store.addMember('hq', { accountId: platform, role: 'admin', joinedVia: 'invite' }, 'refuse');
  return platform;
}

t.test('join succeeds only on open-via-idp domains, and is idempotent', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'open', joinPolicy: 'open-via-idp' });
  await createDomain(app, owner, { name: 'closed' });
  const bo = newAccount();
  const joined = await app.call('POST', '/domains/open/join', { as: { sub: bo } });
  t.equal(joined.status, 201);
  t.match(joined.json, { accountId: bo, domainName: 'open', role: 'member', joinedVia: 'self-idp' });
  const again = await app.call('POST', '/domains/open/join', { as: { sub: bo } });
  t.equal(again.status, 200, 'joining twice is not an error');
  t.same(again.json, joined.json, 'and changes nothing');
  const ownerAgain = await app.call('POST', '/domains/open/join', { as: { sub: owner } });
  t.equal((ownerAgain.json as { role: string }).role, 'business_admin', 'joining never downgrades a role');

  const refused = await app.call('POST', '/domains/closed/join', { as: { sub: bo } });
  t.equal(refused.status, 403);
  t.match(refused.json, { type: 'Forbidden', message: /invitation only/ });
  t.equal((await app.call('POST', '/domains/ghost/join', { as: { sub: bo } })).status, 404);
  t.equal((await app.call('POST', '/domains/open/join', { as: { sub: 'system:x' } })).status, 403);
  const count = await app.pool.query("SELECT count(*)::int AS n FROM memberships m JOIN domains d ON d.id = m.domain_id WHERE d.name = 'closed'");
  t.equal(count.rows[0].n, 1, 'the refused join stored nothing');
});

t.test('invite adds a known account directly; it needs CanManageDomain and cannot grant above the inviter', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const bo = newAccount();
  const invited = await app.call('POST', '/domains/acme/invite', { as: admin(owner, 'acme'), body: { accountId: bo, role: 'facility_manager' } });
  t.equal(invited.status, 201);
  t.match(invited.json, { accountId: bo, domainName: 'acme', role: 'facility_manager', joinedVia: 'invite' });
  t.same(((await app.call('GET', '/me/memberships', { as: { sub: bo } })).json as { domainName: string }[]).map((m) => m.domainName), ['acme']);

  const upper = newAccount().toUpperCase();
  const upperInvite = await app.call('POST', '/domains/acme/invite', { as: admin(owner, 'acme'), body: { accountId: upper, role: 'member' } });
  t.equal((upperInvite.json as { accountId: string }).accountId, upper.toLowerCase(), 'account ids are stored in canonical form');

  const twice = await app.call('POST', '/domains/acme/invite', { as: admin(owner, 'acme'), body: { accountId: bo, role: 'viewer' } });
  t.equal(twice.status, 409);
  const notManager = await app.call('POST', '/domains/acme/invite', {
    as: { sub: bo, memberships: [{ domainName: 'acme', role: 'facility_manager' }] },
    body: { accountId: newAccount(), role: 'viewer' },
  });
  t.equal(notManager.status, 403);
  t.match(notManager.json, { type: 'Forbidden' });
  const escalation = await app.call('POST', '/domains/acme/invite', { as: admin(owner, 'acme'), body: { accountId: newAccount(), role: 'admin' } });
  t.equal(escalation.status, 403, 'a business_admin cannot make a platform admin');
  // The store checks the inviter's memberships as stored too (stale-token-grants-nothing.test.ts).
  const platform = await storedPlatformAdmin(app);
  const byPlatform = await app.call('POST', '/domains/acme/invite', {
    as: { sub: platform, memberships: [{ domainName: 'hq', role: 'admin' }] },
    body: { accountId: newAccount(), role: 'admin' },
  });
  t.equal(byPlatform.status, 201, 'a platform admin may');
  const bad = await app.call('POST', '/domains/acme/invite', { as: admin(owner, 'acme'), body: { accountId: 'bob', role: 'owner' } });
  t.equal(bad.status, 400);
  t.match((bad.json as { errors: string[] }).errors.join('\n'), /accountId: expected an account id \(uuid\)[^]*role: expected a role/);
  t.equal((await app.call('POST', '/domains/ghost/invite', { as: admin(owner, 'ghost'), body: { accountId: newAccount(), role: 'member' } })).status, 404);
  t.equal((await app.call('POST', '/domains/acme/invite', { as: admin(owner, 'acme') })).status, 400, 'no body');
});

t.test('removal: self by identity, others need CanManageDomain (403 text/plain forbidden)', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const [bo, cy] = [newAccount(), newAccount()];
  for (const who of [bo, cy]) await app.call('POST', '/domains/acme/invite', { as: admin(owner, 'acme'), body: { accountId: who, role: 'member' } });

  // The claims say nothing about acme: removing oneself is an identity comparison, not a policy.
  const self = await app.call('DELETE', `/domains/acme/members/${bo}`, { as: { sub: bo } });
  t.equal(self.status, 204);
  t.equal(self.text, '');
  const selfUpper = await app.call('DELETE', `/domains/acme/members/${cy.toUpperCase()}`, { as: { sub: cy } });
  t.equal(selfUpper.status, 204, 'the identity comparison ignores uuid case');

  const dee = newAccount();
  await app.call('POST', '/domains/acme/invite', { as: admin(owner, 'acme'), body: { accountId: dee, role: 'member' } });
  const forbidden = await app.call('DELETE', `/domains/acme/members/${dee}`, {
    as: { sub: newAccount(), memberships: [{ domainName: 'acme', role: 'facility_manager' }] },
  });
  t.equal(forbidden.status, 403);
  t.equal(forbidden.text, 'forbidden');
  t.match(forbidden.headers['content-type'], /^text\/plain/);
  const forbiddenGhost = await app.call('DELETE', '/domains/ghost/members/not-a-uuid', { as: { sub: newAccount() } });
  t.equal(forbiddenGhost.text, 'forbidden', 'policy is decided before anything is looked up');

  const byManager = await app.call('DELETE', `/domains/acme/members/${dee}`, { as: admin(owner, 'acme') });
  t.equal(byManager.status, 204);
  const gone = await app.call('DELETE', `/domains/acme/members/${dee}`, { as: admin(owner, 'acme') });
  t.equal(gone.status, 404);
  t.match(gone.json, { type: 'Not Found' });
  t.equal((await app.call('DELETE', '/domains/acme/members/not-a-uuid', { as: admin(owner, 'acme') })).status, 404);
  t.equal((await app.call('DELETE', `/domains/ghost/members/${dee}`, { as: admin(owner, 'ghost') })).status, 404);
  const remaining = await app.pool.query("SELECT count(*)::int AS n FROM memberships m JOIN domains d ON d.id = m.domain_id WHERE d.name = 'acme'");
  t.equal(remaining.rows[0].n, 1, 'only the owner is left');
});

t.test('the last administrator cannot be removed, by anyone, themselves included (409)', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const self = await app.call('DELETE', `/domains/acme/members/${owner}`, { as: { sub: owner } });
  t.equal(self.status, 409);
  t.match(self.json, { type: 'Conflict', message: /last administrator/ });
  const byPlatform = await app.call('DELETE', `/domains/acme/members/${owner}`, { as: { sub: await storedPlatformAdmin(app), memberships: [{ domainName: 'hq', role: 'admin' }] } });
  t.equal(byPlatform.status, 409, 'nor by a platform administrator');

  // A platform admin member counts as an administrator (weight 100 ≥ 50); a facility manager does not.
  const fm = newAccount();
  await app.call('POST', '/domains/acme/invite', { as: admin(owner, 'acme'), body: { accountId: fm, role: 'facility_manager' } });
  t.equal((await app.call('DELETE', `/domains/acme/members/${owner}`, { as: { sub: owner } })).status, 409, 'a facility manager is no administrator');
  const platform = await storedPlatformAdmin(app);
  const joined = await app.call('POST', '/domains/acme/invite', { as: { sub: platform, memberships: [{ domainName: 'hq', role: 'admin' }] }, body: { accountId: platform, role: 'admin' } });
  t.equal(joined.status, 201, joined.text);
  t.equal((await app.call('DELETE', `/domains/acme/members/${owner}`, { as: { sub: owner } })).status, 204, 'another administrator remains');
  t.equal((await app.call('DELETE', `/domains/acme/members/${platform}`, { as: { sub: platform } })).status, 409, 'now the platform admin is the last');
  t.equal((await app.call('DELETE', `/domains/acme/members/${fm}`, { as: { sub: fm } })).status, 204, 'non-administrators leave freely');
});

t.test('memberships: the caller sees only their own, in domain name order', async (t) => {
  const app = await startTenancy(t);
  const [ana, bo] = [newAccount(), newAccount()];
  await createDomain(app, ana, { name: 'zulu' });
  await createDomain(app, ana, { name: 'alpha' });
  await createDomain(app, bo, { name: 'mike' });
  await app.pool.query("UPDATE memberships SET external_id = 'ext-1' WHERE account_id = $1", [bo]);
  t.same(((await app.call('GET', '/me/memberships', { as: { sub: ana } })).json as { domainName: string }[]).map((m) => m.domainName), ['alpha', 'zulu']);
  t.match((await app.call('GET', '/me/memberships', { as: { sub: bo } })).json, [{ domainName: 'mike', externalId: 'ext-1' }]);
});
