import type pg from 'pg';
import t from 'tap';
import type { MembershipClaim } from '../../../shared/claims.js';
import { sessionsWaitingForLocks, untilSessionsWaitForLocks } from '../../support/stack.js';
import { createDomain, newAccount, startTenancy, type Answer, type TenancyUnderTest } from './support/harness.js';

/**
 * A token outlives the memberships it lists. A business_admin removed from a domain (whose codes the
 * removal revoked) made a new code with her still-valid token, valid for up to a year, and could
 * redeem it later; a creation under way while she was removed, or two removals of her from different
 * domains at once, also left her a working code. The right to create a code is read from the
 * memberships as stored, and a removal takes turns with her creations and other removals.
 */

type Caller = { sub: string; memberships: MembershipClaim[] };
const asAdmin = (sub: string, domain: string): Caller => ({ sub, memberships: [{ domainName: domain, role: 'business_admin' }] });
const UNKNOWN_CODE = '0'.repeat(32);
/** The advisory lock a test holds to stop a transaction at its COMMIT (see holdCommits). */
const HOLD = 4_242_001;

const createCode = (app: TenancyUnderTest, as: Caller, domain: string, role = 'business_admin'): Promise<Answer> =>
  app.call('POST', `/domains/${domain}/invite-codes`, { as, body: { role, expiresInHours: 8784 } });

async function newCode(app: TenancyUnderTest, as: Caller, domain: string): Promise<string> {
  const created = await createCode(app, as, domain);
  if (created.status !== 201) throw new Error(`creating a code: ${created.status} ${created.text}`);
  return (created.json as { code: string }).code;
}

const redeem = (app: TenancyUnderTest, code: string): Promise<Answer> => app.call('POST', `/invite-codes/${code}/redeem`, { as: { sub: newAccount() } });

async function codesMadeBy(app: TenancyUnderTest, account: string): Promise<number> {
  const left = await app.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM invite_codes WHERE created_by = $1 AND redeemed_at IS NULL', [account]);
  return left.rows[0]?.n ?? -1;
}

/**
 * Makes every transaction that `event`s a row of `table` for `account` wait at its COMMIT until the
 * returned release is called: a deferred constraint trigger takes, at commit, the advisory lock a
 * test connection holds. Such a transaction has done all its reads and writes, uncommitted, while it
 * waits, which is where the races this file guards opened.
 */
async function holdCommits(t: { teardown(fn: () => unknown): void }, app: TenancyUnderTest, table: string, event: 'INSERT' | 'DELETE', column: string, account: string): Promise<() => Promise<void>> {
  const row = event === 'INSERT' ? 'NEW' : 'OLD';
  await app.pool.query(`CREATE OR REPLACE FUNCTION hold_for_test() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM pg_advisory_xact_lock_shared(${HOLD}); RETURN NULL; END $$`);
  await app.pool.query(`CREATE CONSTRAINT TRIGGER hold_${table} AFTER ${event} ON ${table} DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (${row}.${column} = '${account}'::uuid) EXECUTE FUNCTION hold_for_test()`);
  const holder: pg.PoolClient = await app.pool.connect();
  await holder.query('SELECT pg_advisory_lock($1)', [HOLD]);
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    await holder.query('SELECT pg_advisory_unlock($1)', [HOLD]);
    holder.release();
  };
  t.teardown(release);
  return release;
}

/** Waits until `request` has answered or `sessions` sessions wait for a lock, whichever comes first. */
async function untilAnsweredOrWaiting(app: TenancyUnderTest, request: Promise<Answer>, sessions: number): Promise<void> {
  let answered = false;
  void request.then(
    () => (answered = true),
    () => (answered = true),
  );
  for (let i = 0; i < 500 && !answered; i++) {
    if ((await sessionsWaitingForLocks(app.pool)) >= sessions) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  if (!answered) throw new Error(`the request neither answered nor waited: fewer than ${sessions} sessions waited for a lock`);
}

t.test('a removed administrator’s token makes no new code: 403, and nothing is stored', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  const ana = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  t.equal((await app.call('POST', '/domains/acme/invite', { as: asAdmin(owner, 'acme'), body: { accountId: ana, role: 'business_admin' } })).status, 201);
  t.equal((await createCode(app, asAdmin(ana, 'acme'), 'acme')).status, 201, 'she may while she is business_admin');
  t.equal((await app.call('DELETE', `/domains/acme/members/${ana}`, { as: asAdmin(owner, 'acme') })).status, 204, 'the owner removes her');
  t.equal(await codesMadeBy(app, ana), 0, 'the removal revoked her code');

  const stale = await createCode(app, asAdmin(ana, 'acme'), 'acme');
  t.equal(stale.status, 403, stale.text);
  t.match(stale.json, { type: 'Forbidden', message: 'you may not manage domain "acme"' }, 'the answer a token without the right gets');
  t.equal(await codesMadeBy(app, ana), 0, 'nothing is stored');
});

t.test('a former platform administrator’s token grants no more than her stored memberships allow', async (t) => {
  const app = await startTenancy(t);
  const root = newAccount();
  const pia = newAccount();
  await createDomain(app, root, { name: 'hq' });
  await createDomain(app, pia, { name: 'acme' });
  await app.store.addMember('hq', { accountId: pia, role: 'admin', joinedVia: 'invite' }, 'refuse');
  const asPia: Caller = { sub: pia, memberships: [{ domainName: 'acme', role: 'business_admin' }, { domainName: 'hq', role: 'admin' }] };
  t.equal((await createCode(app, asPia, 'acme', 'admin')).status, 201, 'a platform administrator may grant admin');
  t.equal((await app.call('DELETE', `/domains/hq/members/${pia}`, { as: asAdmin(root, 'hq') })).status, 204);

  const overGrant = await createCode(app, asPia, 'acme', 'admin');
  t.equal(overGrant.status, 403, overGrant.text);
  t.match(overGrant.json, { type: 'Forbidden', message: 'you may not grant the role admin' });
  t.equal((await createCode(app, asPia, 'acme', 'business_admin')).status, 201, 'what her business_admin membership allows she still may');
  const roles = await app.pool.query<{ role: string }>('SELECT role FROM invite_codes WHERE created_by = $1 AND redeemed_at IS NULL', [pia]);
  t.same(roles.rows, [{ role: 'business_admin' }], 'no admin code of hers is stored');
});

t.test('a code created while its creator is being removed does not outlive the removal', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  const root = newAccount();
  const pia = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  await createDomain(app, root, { name: 'hq' });
  await app.store.addMember('hq', { accountId: pia, role: 'admin', joinedVia: 'invite' }, 'refuse');
  const asPia: Caller = { sub: pia, memberships: [{ domainName: 'hq', role: 'admin' }] };

  // Her creation has inserted its code and waits to commit; she is removed from hq meanwhile (the
  // removal locks hq, not acme, so nothing about the domain orders the two).
  const release = await holdCommits(t, app, 'invite_codes', 'INSERT', 'created_by', pia);
  const creating = createCode(app, asPia, 'acme');
  await untilSessionsWaitForLocks(app.pool, 1);
  const removing = app.call('DELETE', `/domains/hq/members/${pia}`, { as: asAdmin(root, 'hq') });
  await untilAnsweredOrWaiting(app, removing, 2);
  await release();
  const [created, removed] = await Promise.all([creating, removing]);
  t.equal(removed.status, 204, removed.text);

  if (created.status === 201) {
    const late = await redeem(app, (created.json as { code: string }).code);
    const unknown = await redeem(app, UNKNOWN_CODE);
    t.same({ status: late.status, json: late.json }, { status: unknown.status, json: unknown.json }, 'the code made during the removal answers like an unknown one');
  } else {
    t.equal(created.status, 403, created.text);
  }
  t.equal(await codesMadeBy(app, pia), 0, 'no code of hers is left');
});

t.test('two removals of one platform administrator from different domains at once leave no code of hers', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  const root = newAccount();
  const pia = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  await createDomain(app, root, { name: 'hq' });
  await createDomain(app, root, { name: 'hq-eu' });
  await app.store.addMember('hq', { accountId: pia, role: 'admin', joinedVia: 'invite' }, 'refuse');
  await app.store.addMember('hq-eu', { accountId: pia, role: 'admin', joinedVia: 'invite' }, 'refuse');
  const code = await newCode(app, { sub: pia, memberships: [{ domainName: 'hq', role: 'admin' }, { domainName: 'hq-eu', role: 'admin' }] }, 'acme');

  // Each removal alone leaves her a platform administrator through the other membership, so keeps
  // her code; held at commit, both have read what they keep before either has committed.
  const release = await holdCommits(t, app, 'memberships', 'DELETE', 'account_id', pia);
  const removals = [
    app.call('DELETE', `/domains/hq/members/${pia}`, { as: asAdmin(root, 'hq') }),
    app.call('DELETE', `/domains/hq-eu/members/${pia}`, { as: asAdmin(root, 'hq-eu') }),
  ];
  await untilSessionsWaitForLocks(app.pool, 2);
  await release();
  const answers = await Promise.all(removals);
  t.same(answers.map((a) => a.status), [204, 204], answers.map((a) => a.text).join(' '));

  const late = await redeem(app, code);
  const unknown = await redeem(app, UNKNOWN_CODE);
  t.same({ status: late.status, json: late.json }, { status: unknown.status, json: unknown.json }, 'her code answers like an unknown one');
  t.equal(await codesMadeBy(app, pia), 0, 'no code of hers is left');
});
