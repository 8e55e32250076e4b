import { Redis } from 'ioredis';
import t from 'tap';
import type { MembershipClaim } from '../../../shared/claims.js';
import { silentLogger } from '../../../shared/logger.js';
import { AccountDeletedConsumer } from '../../../cloud/tenancy/account-deleted-consumer.js';
import { UNREDEEMED_CODES_OF_SQL } from '../../../cloud/tenancy/pg-store.js';
import { uniqueName } from '../../support/stack.js';
import { createDomain, newAccount, planOf, startTenancy, type Answer, type TenancyUnderTest } from './support/harness.js';
import { eventually, stackRedisUrl } from './support/redis.js';

/**
 * An invite code lives only as long as its creator's right to create it. A business_admin removed
 * from a domain (or deleted through the account-deleted stream) used to keep her unredeemed codes,
 * valid for up to a year, and redeem one of her own to become business_admin again.
 */

const admin = (sub: string, domain: string): { sub: string; memberships: MembershipClaim[] } => ({ sub, memberships: [{ domainName: domain, role: 'business_admin' }] });
const UNKNOWN_CODE = '0'.repeat(32);

async function newCode(app: TenancyUnderTest, as: { sub: string; memberships: MembershipClaim[] }, domain: string, role = 'business_admin'): Promise<string> {
  const created = await app.call('POST', `/domains/${domain}/invite-codes`, { as, body: { role, expiresInHours: 8784 } });
  if (created.status !== 201) throw new Error(`creating a code: ${created.status} ${created.text}`);
  return (created.json as { code: string }).code;
}

const redeem = (app: TenancyUnderTest, code: string, account: string): Promise<Answer> => app.call('POST', `/invite-codes/${code}/redeem`, { as: { sub: account } });

/** The answer to a code that never existed, which a revoked code must not be told apart from. */
async function unknownCodeAnswer(app: TenancyUnderTest): Promise<Pick<Answer, 'status' | 'json'>> {
  const answer = await redeem(app, UNKNOWN_CODE, newAccount());
  return { status: answer.status, json: answer.json };
}

async function rolesOf(app: TenancyUnderTest, account: string): Promise<string[][]> {
  const rows = await app.pool.query<{ name: string; role: string }>(
    'SELECT d.name, m.role FROM memberships m JOIN domains d ON d.id = m.domain_id WHERE m.account_id = $1 ORDER BY d.name',
    [account],
  );
  return rows.rows.map((r) => [r.name, r.role]);
}

t.test('a removed administrator cannot come back through her own code; another administrator’s code still works', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  const ana = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  await createDomain(app, ana, { name: 'globex' });
  t.equal((await app.call('POST', '/domains/acme/invite', { as: admin(owner, 'acme'), body: { accountId: ana, role: 'business_admin' } })).status, 201);

  const anasAcmeCode = await newCode(app, admin(ana, 'acme'), 'acme');
  const anasGlobexCode = await newCode(app, admin(ana, 'globex'), 'globex', 'member');
  const ownersCode = await newCode(app, admin(owner, 'acme'), 'acme', 'member');

  t.equal((await app.call('DELETE', `/domains/acme/members/${ana}`, { as: admin(owner, 'acme') })).status, 204, 'the owner removes ana');
  const back = await redeem(app, anasAcmeCode, ana);
  t.same({ status: back.status, json: back.json }, await unknownCodeAnswer(app), 'her own code answers exactly like an unknown one');
  t.same(await rolesOf(app, ana), [['globex', 'business_admin']], 'she is not business_admin of acme again');
  t.equal((await redeem(app, anasAcmeCode, newAccount())).status, 404, 'nor is anyone else let in by it');

  const joiner = newAccount();
  t.equal((await redeem(app, ownersCode, joiner)).status, 201, 'the owner’s code still works');
  t.equal((await redeem(app, anasGlobexCode, newAccount())).status, 201, 'her code for a domain she still administers still works');
});

t.test('removing oneself revokes one’s codes for that domain too', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  const ana = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  await app.store.addMember('acme', { accountId: ana, role: 'business_admin', joinedVia: 'invite' }, 'refuse');
  const code = await newCode(app, admin(ana, 'acme'), 'acme');
  t.equal((await app.call('DELETE', `/domains/acme/members/${ana}`, { as: { sub: ana } })).status, 204);
  const back = await redeem(app, code, ana);
  t.same({ status: back.status, json: back.json }, await unknownCodeAnswer(app));
  t.same(await rolesOf(app, ana), []);
});

t.test('a platform administrator’s codes live as long as the membership that makes her one', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  const root = newAccount();
  const pia = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  await createDomain(app, owner, { name: 'globex' });
  await createDomain(app, root, { name: 'hq' });
  await app.store.addMember('hq', { accountId: pia, role: 'admin', joinedVia: 'invite' }, 'refuse');
  await app.store.addMember('globex', { accountId: pia, role: 'member', joinedVia: 'invite' }, 'refuse');
  const asPia = { sub: pia, memberships: [{ domainName: 'globex', role: 'member' }, { domainName: 'hq', role: 'admin' }] };
  const first = await newCode(app, asPia, 'acme');
  const second = await newCode(app, asPia, 'acme');

  // She is no member of acme: there is nothing of hers to remove there, and her codes stay.
  t.equal((await app.call('DELETE', `/domains/acme/members/${pia}`, { as: admin(owner, 'acme') })).status, 404);
  // Losing an ordinary membership leaves her a platform administrator, who may still issue them.
  t.equal((await app.call('DELETE', `/domains/globex/members/${pia}`, { as: admin(owner, 'globex') })).status, 204);
  t.equal((await redeem(app, first, newAccount())).status, 201, 'her code works while she is a platform administrator');

  t.equal((await app.call('DELETE', `/domains/hq/members/${pia}`, { as: admin(root, 'hq') })).status, 204, 'she stops being one');
  const late = await redeem(app, second, newAccount());
  t.same({ status: late.status, json: late.json }, await unknownCodeAnswer(app), 'and her remaining code for acme is gone');
});

t.test('a platform administrator whose admin domain is deleted: her admin code for another domain no longer works', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  const pia = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  await createDomain(app, newAccount(), { name: 'ops' });
  await app.store.addMember('ops', { accountId: pia, role: 'admin', joinedVia: 'invite' }, 'refuse');
  const code = await newCode(app, { sub: pia, memberships: [{ domainName: 'ops', role: 'admin' }] }, 'acme', 'admin');

  // An operator deletes ops: her membership goes by cascade, and no removal revokes her codes.
  await app.pool.query("DELETE FROM domains WHERE name = 'ops'");
  const back = await redeem(app, code, pia);
  t.same({ status: back.status, json: back.json }, await unknownCodeAnswer(app), 'her code reads as unknown');
  t.same(await app.store.membershipsOf(pia), [], 'she is no member of acme, and no platform administrator again');
  const unused = await app.pool.query('SELECT redeemed_at FROM invite_codes WHERE code = $1', [code]);
  t.same(unused.rows, [{ redeemed_at: null }], 'the code is not spent');
});

t.test('an account deleted through the account-deleted stream leaves no code that still works', async (t) => {
  const app = await startTenancy(t);
  const stream = uniqueName('account.deleted.test');
  const group = uniqueName('tenancy_test');
  const redis = new Redis(stackRedisUrl());
  t.teardown(async () => {
    await redis.del(stream, `${stream}.dead`);
    redis.disconnect();
  });
  const owner = newAccount();
  const ana = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  await createDomain(app, ana, { name: 'globex' });
  await app.store.addMember('acme', { accountId: ana, role: 'business_admin', joinedVia: 'invite' }, 'refuse');
  const asAna = { sub: ana, memberships: [{ domainName: 'acme', role: 'business_admin' }, { domainName: 'globex', role: 'business_admin' }] };
  const anasCodes = [await newCode(app, asAna, 'acme'), await newCode(app, asAna, 'globex')];
  const ownersCode = await newCode(app, admin(owner, 'acme'), 'acme', 'member');

  const consumer = new AccountDeletedConsumer({ redisUrl: stackRedisUrl(), stream, group, consumer: 'c1', removeAccount: (id) => app.store.removeAccount(id), logger: silentLogger() });
  t.teardown(() => consumer.stop());
  await consumer.start();
  await redis.xadd(stream, '*', 'accountId', ana);
  await eventually(async () => (await rolesOf(app, ana)).length === 0, 'her memberships removed');

  const unknown = await unknownCodeAnswer(app);
  for (const code of anasCodes) {
    const answer = await redeem(app, code, newAccount());
    t.same({ status: answer.status, json: answer.json }, unknown, 'her code answers exactly like an unknown one');
  }
  t.equal((await redeem(app, ownersCode, newAccount())).status, 201, 'the owner’s code still works');

  // Her token outlives her account: a code made with it afterwards is refused and nothing is stored.
  const stale = await app.call('POST', '/domains/acme/invite-codes', { as: asAna, body: { role: 'member' } });
  t.equal(stale.status, 403, stale.text);
  t.match(stale.json, { type: 'Forbidden', message: `account ${ana} has been deleted` });
  const left = await app.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM invite_codes WHERE created_by = $1 AND redeemed_at IS NULL', [ana]);
  t.equal(left.rows[0]?.n, 0, 'no unredeemed code of hers is left');
});

t.test('a creator’s unredeemed codes are found by an index, not a scan of every code ever made', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  await app.pool.query(
    `INSERT INTO invite_codes (domain_id, code, role, created_by, expires_at, redeemed_by, redeemed_at)
     SELECT d.id, md5(i::text), 'member', gen_random_uuid(), now() + interval '1 day', gen_random_uuid(), now()
     FROM domains d, generate_series(1, 5000) i WHERE d.name = 'acme'`,
  );
  await app.pool.query('ANALYZE invite_codes');
  const plan = await planOf(app.pool, UNREDEEMED_CODES_OF_SQL, [owner]);
  t.notOk(plan.some((n) => n.type === 'Seq Scan' && n.relation === 'invite_codes'), `invite_codes is not scanned (${JSON.stringify(plan)})`);
});
