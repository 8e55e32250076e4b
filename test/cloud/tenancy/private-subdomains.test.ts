import t from 'tap';
import { createDomain, newAccount, startTenancy, type TenancyUnderTest } from './support/harness.js';

/**
 * A domain's private children, with their member counts, are its members' business. Any signed-in
 * account used to list another organization's private subdomains; now a caller who is no member of the
 * parent and no platform administrator sees only the public ones, as GET /domains shows public domains.
 */

async function childrenOf(app: TenancyUnderTest, parent: string, as: { sub: string; memberships?: { domainName: string; role: string }[] }) {
  const answer = await app.call('GET', `/domains/${parent}/subdomains`, { as });
  const entries = Array.isArray(answer.json) ? (answer.json as { name: string; memberCount?: number }[]).map((d) => [d.name, d.memberCount]) : answer.json;
  return { status: answer.status, entries };
}

async function acmeWithChildren(app: TenancyUnderTest): Promise<string> {
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const asOwner = { sub: owner, memberships: [{ domainName: 'acme', role: 'business_admin' }] };
  for (const child of [
    { name: 'acme-lab', isPublic: false },
    { name: 'acme-shop', isPublic: true },
    { name: 'acme-vault', isPublic: false },
  ]) {
    const created = await app.call('POST', '/domains/acme/subdomains', { as: asOwner, body: { ...child, displayName: child.name } });
    if (created.status !== 201) throw new Error(`creating ${child.name}: ${created.status} ${created.text}`);
  }
  return owner;
}

const ALL = [
  ['acme-lab', 1],
  ['acme-shop', 1],
  ['acme-vault', 1],
];

t.test('a caller who is no member of the parent sees only its public children', async (t) => {
  const app = await startTenancy(t);
  await acmeWithChildren(app);
  const stranger = await childrenOf(app, 'acme', { sub: newAccount() });
  t.same(stranger, { status: 200, entries: [['acme-shop', 1]] }, 'an account with no memberships');
  const otherOrg = await childrenOf(app, 'acme', { sub: newAccount(), memberships: [{ domainName: 'globex', role: 'business_admin' }, { domainName: 'acme-lab', role: 'member' }] });
  t.same(otherOrg.entries, [['acme-shop', 1]], 'an administrator of another domain, even a member of one child, is no member of the parent');
  const paged = await app.call('GET', '/domains/acme/subdomains?after=acme-lab&limit=1', { as: { sub: newAccount() } });
  t.same((paged.json as { name: string }[]).map((d) => d.name), ['acme-shop'], 'pages skip private children too');
  t.equal(paged.headers.link, '</domains/acme/subdomains?after=acme-shop&limit=1>; rel="next"');
  const next = await app.call('GET', '/domains/acme/subdomains?after=acme-shop&limit=1', { as: { sub: newAccount() } });
  t.same(next.json, [], 'the vault is not on the next page either');
  t.equal((await childrenOf(app, 'ghost', { sub: newAccount() })).status, 404, 'an unknown parent is still 404');
});

t.test('a member of the parent, of any role, sees every child', async (t) => {
  const app = await startTenancy(t);
  const owner = await acmeWithChildren(app);
  t.same(await childrenOf(app, 'acme', { sub: owner, memberships: [{ domainName: 'acme', role: 'business_admin' }] }), { status: 200, entries: ALL });
  t.same((await childrenOf(app, 'acme', { sub: newAccount(), memberships: [{ domainName: 'acme', role: 'viewer' }] })).entries, ALL, 'a viewer too');
});

t.test('a platform administrator sees every child of any domain', async (t) => {
  const app = await startTenancy(t);
  await acmeWithChildren(app);
  t.same(await childrenOf(app, 'acme', { sub: newAccount(), memberships: [{ domainName: 'hq', role: 'admin' }] }), { status: 200, entries: ALL });
});
