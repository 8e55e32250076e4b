import t from 'tap';
import type { MembershipClaim } from '../../../shared/claims.js';
import { createDomain, newAccount, startTenancy, type Answer, type TenancyUnderTest } from './support/harness.js';

/**
 * A token outlives the memberships it lists, and the account too. A business_admin removed from a
 * domain invited herself back with her still-valid token, for good; a removed platform administrator
 * did the same as admin, a deleted account's token invited others, and a stale token created
 * subdomains (each making her their business_admin) or removed the members she left behind. A direct
 * invitation, a removal of another member and a subdomain need the right in the memberships as stored
 * too, as an invite code does (removed-admin-makes-no-invite-code).
 */

type Caller = { sub: string; memberships: MembershipClaim[] };
const asAdmin = (sub: string, domain: string): Caller => ({ sub, memberships: [{ domainName: domain, role: 'business_admin' }] });

const invite = (app: TenancyUnderTest, as: Caller, domain: string, accountId: string, role: string): Promise<Answer> =>
  app.call('POST', `/domains/${domain}/invite`, { as, body: { accountId, role } });

const createSubdomain = (app: TenancyUnderTest, as: Caller, parent: string, name: string): Promise<Answer> =>
  app.call('POST', `/domains/${parent}/subdomains`, { as, body: { name, displayName: name } });

async function roleIn(app: TenancyUnderTest, account: string, domain: string): Promise<string | undefined> {
  const found = await app.pool.query<{ role: string }>('SELECT m.role FROM memberships m JOIN domains d ON d.id = m.domain_id WHERE d.name = $1 AND m.account_id = $2', [domain, account]);
  return found.rows[0]?.role;
}

async function domainExists(app: TenancyUnderTest, name: string): Promise<boolean> {
  return (await app.store.findDomain(name)) !== undefined;
}

/** acme with two business_admins, the owner and Ana, then the owner removes Ana. */
async function acmeWithoutAna(app: TenancyUnderTest): Promise<{ owner: string; ana: string }> {
  const owner = newAccount();
  const ana = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const added = await invite(app, asAdmin(owner, 'acme'), 'acme', ana, 'business_admin');
  if (added.status !== 201) throw new Error(`inviting ana: ${added.status} ${added.text}`);
  const removed = await app.call('DELETE', `/domains/acme/members/${ana}`, { as: asAdmin(owner, 'acme') });
  if (removed.status !== 204) throw new Error(`removing ana: ${removed.status} ${removed.text}`);
  return { owner, ana };
}

t.test('a removed administrator’s token does not invite her back: 403, and no membership', async (t) => {
  const app = await startTenancy(t);
  const { ana } = await acmeWithoutAna(app);

  const back = await invite(app, asAdmin(ana, 'acme'), 'acme', ana, 'business_admin');
  t.equal(back.status, 403, back.text);
  t.match(back.json, { type: 'Forbidden', message: 'you may not manage domain "acme"' }, 'the answer a token without the right gets');
  t.equal(await roleIn(app, ana, 'acme'), undefined, 'she is no member of acme');

  const cy = newAccount();
  const accomplice = await invite(app, asAdmin(ana, 'acme'), 'acme', cy, 'business_admin');
  t.equal(accomplice.status, 403, accomplice.text);
  t.equal(await roleIn(app, cy, 'acme'), undefined, 'nor anyone she invites');
});

t.test('a removed platform administrator’s token neither invites her as admin nor grants above her stored role', async (t) => {
  const app = await startTenancy(t);
  const root = newAccount();
  const pia = newAccount();
  await createDomain(app, root, { name: 'hq' });
  await createDomain(app, pia, { name: 'acme' });
  await createDomain(app, root, { name: 'globex' });
  await app.store.addMember('hq', { accountId: pia, role: 'admin', joinedVia: 'invite' }, 'refuse');
  const asPia: Caller = { sub: pia, memberships: [{ domainName: 'acme', role: 'business_admin' }, { domainName: 'hq', role: 'admin' }] };
  t.equal((await app.call('DELETE', `/domains/hq/members/${pia}`, { as: asAdmin(root, 'hq') })).status, 204, 'root removes her from hq');

  const intoGlobex = await invite(app, asPia, 'globex', pia, 'admin');
  t.equal(intoGlobex.status, 403, intoGlobex.text);
  t.match(intoGlobex.json, { type: 'Forbidden', message: 'you may not manage domain "globex"' });
  t.equal(await roleIn(app, pia, 'globex'), undefined, 'no membership in a domain she managed only as platform administrator');

  const adminInAcme = await invite(app, asPia, 'acme', pia, 'admin');
  t.equal(adminInAcme.status, 403, adminInAcme.text);
  t.match(adminInAcme.json, { type: 'Forbidden', message: 'you may not grant the role admin' });
  t.equal(await roleIn(app, pia, 'acme'), 'business_admin', 'her own domain keeps her as she is stored');

  const bo = newAccount();
  t.equal((await invite(app, asPia, 'acme', bo, 'business_admin')).status, 201, 'what her stored business_admin membership allows she still may');
});

t.test('a deleted account’s token invites no one: 403, and no membership', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  const gone = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  t.equal((await invite(app, asAdmin(owner, 'acme'), 'acme', gone, 'business_admin')).status, 201);
  t.equal(await app.store.removeAccount(gone), 1, 'the account-deleted event removes its membership');

  const cy = newAccount();
  const invited = await invite(app, asAdmin(gone, 'acme'), 'acme', cy, 'member');
  t.equal(invited.status, 403, invited.text);
  t.match(invited.json, { type: 'Forbidden', message: `account ${gone} has been deleted` });
  t.equal(await roleIn(app, cy, 'acme'), undefined, 'the account it named is no member');
});

t.test('a removed administrator’s token creates no subdomain: 403, and no domain', async (t) => {
  const app = await startTenancy(t);
  const { ana } = await acmeWithoutAna(app);

  const child = await createSubdomain(app, asAdmin(ana, 'acme'), 'acme', 'acme-lab');
  t.equal(child.status, 403, child.text);
  t.match(child.json, { type: 'Forbidden', message: 'you may not manage domain "acme"' });
  t.notOk(await domainExists(app, 'acme-lab'), 'no domain row');
  t.same((await app.store.membershipsOf(ana)).map((m) => m.domainName), [], 'and she administers nothing');
});

t.test('a current administrator, and a stored platform administrator, still invite and create subdomains', async (t) => {
  const app = await startTenancy(t);
  const { owner } = await acmeWithoutAna(app);
  const bo = newAccount();
  const invited = await invite(app, asAdmin(owner, 'acme'), 'acme', bo, 'business_admin');
  t.equal(invited.status, 201, invited.text);
  t.match(invited.json, { accountId: bo, domainName: 'acme', role: 'business_admin', joinedVia: 'invite' });
  const child = await createSubdomain(app, asAdmin(owner, 'acme'), 'acme', 'acme-lab');
  t.equal(child.status, 201, child.text);
  t.equal(await roleIn(app, owner, 'acme-lab'), 'business_admin');

  const root = newAccount();
  await createDomain(app, newAccount(), { name: 'hq' });
  await app.store.addMember('hq', { accountId: root, role: 'admin', joinedVia: 'invite' }, 'refuse');
  const asRoot: Caller = { sub: root, memberships: [{ domainName: 'hq', role: 'admin' }] };
  t.equal((await invite(app, asRoot, 'acme', root, 'admin')).status, 201, 'a platform administrator as stored invites into any domain');
  t.equal((await createSubdomain(app, asRoot, 'acme', 'acme-hq')).status, 201, 'and creates subdomains under it');
});

t.test('only an account invites: a system subject is refused, as for invite codes', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const bo = newAccount();
  const bySystem = await invite(app, { sub: 'system:x', memberships: [{ domainName: 'acme', role: 'admin' }] }, 'acme', bo, 'member');
  t.equal(bySystem.status, 403, bySystem.text);
  t.match(bySystem.json, { type: 'Forbidden', message: 'only an account may invite a member' });
  t.equal(await roleIn(app, bo, 'acme'), undefined);
});

const removeMember = (app: TenancyUnderTest, as: Caller, domain: string, accountId: string): Promise<Answer> =>
  app.call('DELETE', `/domains/${domain}/members/${accountId}`, { as });

t.test('a removed administrator’s token removes no one: 403, and the member stays', async (t) => {
  const app = await startTenancy(t);
  const { owner, ana } = await acmeWithoutAna(app);
  const bo = newAccount();
  t.equal((await invite(app, asAdmin(owner, 'acme'), 'acme', bo, 'member')).status, 201);

  const byAna = await removeMember(app, asAdmin(ana, 'acme'), 'acme', bo);
  t.equal(byAna.status, 403, byAna.text);
  t.equal(byAna.text, 'forbidden', 'the seed\'s body, as for a token without the right');
  t.equal(await roleIn(app, bo, 'acme'), 'member', 'bo is still a member');

  const ownerGone = await removeMember(app, asAdmin(ana, 'acme'), 'acme', owner);
  t.equal(ownerGone.status, 403, ownerGone.text);
  t.equal(await roleIn(app, owner, 'acme'), 'business_admin', 'and so is the owner');
});

t.test('a deleted account’s token removes no one; a system subject removes no one else', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  const gone = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  t.equal((await invite(app, asAdmin(owner, 'acme'), 'acme', gone, 'business_admin')).status, 201);
  t.equal(await app.store.removeAccount(gone), 1);

  const byGone = await removeMember(app, asAdmin(gone, 'acme'), 'acme', owner);
  t.equal(byGone.status, 403, byGone.text);
  t.equal(byGone.text, 'forbidden');
  const bySystem = await removeMember(app, { sub: 'system:x', memberships: [{ domainName: 'acme', role: 'admin' }] }, 'acme', owner);
  t.equal(bySystem.status, 403, bySystem.text);
  t.equal(bySystem.text, 'forbidden');
  t.equal(await roleIn(app, owner, 'acme'), 'business_admin', 'the owner is still administrator');
});

t.test('a stored administrator, or a stored platform administrator, removes members; anyone removes herself', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const [bo, cy, di] = [newAccount(), newAccount(), newAccount()];
  for (const account of [bo, cy, di]) t.equal((await invite(app, asAdmin(owner, 'acme'), 'acme', account, 'member')).status, 201);
  t.equal((await removeMember(app, asAdmin(owner, 'acme'), 'acme', bo)).status, 204, 'the owner removes bo');
  t.equal(await roleIn(app, bo, 'acme'), undefined);

  const root = newAccount();
  await createDomain(app, newAccount(), { name: 'hq' });
  await app.store.addMember('hq', { accountId: root, role: 'admin', joinedVia: 'invite' }, 'refuse');
  const asRoot: Caller = { sub: root, memberships: [{ domainName: 'hq', role: 'admin' }] };
  t.equal((await removeMember(app, asRoot, 'acme', cy)).status, 204, 'a stored platform administrator removes cy');
  t.equal(await roleIn(app, cy, 'acme'), undefined);

  t.equal((await removeMember(app, { sub: di, memberships: [] }, 'acme', di)).status, 204, 'di leaves on her own');
  t.equal(await roleIn(app, di, 'acme'), undefined);
});

t.test('two administrators removing each other at once: one goes, the other stays, and no request fails', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const [ana, bo] = [newAccount(), newAccount()];
  for (const account of [ana, bo]) t.equal((await invite(app, asAdmin(owner, 'acme'), 'acme', account, 'business_admin')).status, 201);
  const answers = await Promise.all([removeMember(app, asAdmin(ana, 'acme'), 'acme', bo), removeMember(app, asAdmin(bo, 'acme'), 'acme', ana)]);
  t.same(answers.map((a) => a.status).sort(), [204, 403], answers.map((a) => a.text).join(' | '));
  const left = [await roleIn(app, ana, 'acme'), await roleIn(app, bo, 'acme')].filter((role) => role !== undefined);
  t.same(left, ['business_admin'], 'exactly one of them is still administrator');
});
