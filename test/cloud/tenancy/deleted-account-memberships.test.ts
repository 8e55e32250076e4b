import t from 'tap';
import { sessionsWaitingForLocks } from '../../support/stack.js';
import { createDomain, newAccount, startTenancy, type TenancyUnderTest } from './support/harness.js';

/**
 * The account-deleted event removes every membership of an account. A membership must not come back
 * afterwards: not from a redemption that was under way when the event arrived, and not from a request
 * made later with a token the deleted account still holds, nor from a manager or provisioner naming it.
 */

/**
 * Polls until `condition` holds. It has no time limit of its own: tap's timeout fails a test whose
 * condition never comes, so a loaded machine cannot make it give up and go on as if it held.
 */
async function until(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 20));
}

const admin = (sub: string, domain: string) => ({ sub, memberships: [{ domainName: domain, role: 'business_admin' }] });

async function newCode(app: TenancyUnderTest, owner: string, domain: string): Promise<string> {
  const created = await app.call('POST', `/domains/${domain}/invite-codes`, { as: admin(owner, domain), body: { role: 'member' } });
  if (created.status !== 201) throw new Error(`creating a code: ${created.status} ${created.text}`);
  return (created.json as { code: string }).code;
}

async function membershipsOf(app: TenancyUnderTest, account: string): Promise<number> {
  const rows = await app.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM memberships WHERE account_id = $1', [account]);
  return rows.rows[0]?.n ?? -1;
}

async function redeemedBy(app: TenancyUnderTest, code: string): Promise<string | null> {
  const rows = await app.pool.query<{ redeemed_by: string | null }>('SELECT redeemed_by FROM invite_codes WHERE code = $1', [code]);
  return rows.rows[0]?.redeemed_by ?? null;
}

t.test('an account deleted while it redeems a code keeps no membership', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  await createDomain(app, owner, { name: 'globex' });
  const code = await newCode(app, owner, 'acme');
  const leaving = newAccount();
  await app.store.addMember('globex', { accountId: leaving, role: 'member', joinedVia: 'invite' }, 'refuse');

  // A gate between redemption's two statements: the code is marked, the membership not yet added.
  const GATE = 7_310_043;
  await app.pool.query(`
    CREATE FUNCTION test_redeem_gate() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM pg_advisory_xact_lock(${GATE}); RETURN NULL; END $$;
    CREATE TRIGGER test_redeem_gate AFTER UPDATE ON invite_codes FOR EACH ROW EXECUTE FUNCTION test_redeem_gate();`);
  const gate = await app.pool.connect();
  try {
    await gate.query('SELECT pg_advisory_lock($1)', [GATE]);
    let redemptionSettled = false;
    const redeeming = app.call('POST', `/invite-codes/${code}/redeem`, { as: { sub: leaving } }).finally(() => (redemptionSettled = true));
    await until(async () => redemptionSettled || (await sessionsWaitingForLocks(app.pool)) >= 1);
    if (redemptionSettled) {
      const early = await redeeming;
      throw new Error(`the redemption never waited at the gate: ${early.status} ${early.text}`);
    }
    let removalSettled = false;
    const removal = app.store.removeAccount(leaving).finally(() => (removalSettled = true));
    // The deletion either waits for the redemption (two sessions waiting) or, as it used to, finishes
    // at once and misses the membership the redemption is about to add.
    await until(async () => removalSettled || (await sessionsWaitingForLocks(app.pool)) >= 2);
    await gate.query('SELECT pg_advisory_unlock($1)', [GATE]);
    const redeemed = await redeeming;
    await removal;
    t.equal(redeemed.status, 201, `the redemption that started first completes (${redeemed.text})`);
  } finally {
    gate.release();
  }
  t.equal(await membershipsOf(app, leaving), 0, 'the deletion removed the membership the redemption added');
  t.same((await app.signed('GET', `/internal/memberships?accountId=${leaving}`)).json, [], 'the login path shows none');
});

t.test('after an account is deleted, no route adds a membership for it again', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme', joinPolicy: 'open-via-idp' });
  const code = await newCode(app, owner, 'acme');
  const gone = newAccount();
  await app.store.addMember('acme', { accountId: gone, role: 'member', joinedVia: 'invite' }, 'refuse');
  t.equal(await app.store.removeAccount(gone), 1, 'the event removes its membership');
  t.equal(await app.store.removeAccount(gone), 0, 'a redelivered event removes nothing more and does not fail');

  const redeemed = await app.call('POST', `/invite-codes/${code}/redeem`, { as: { sub: gone } });
  t.equal(redeemed.status, 403, redeemed.text);
  t.match(redeemed.json, { type: 'Forbidden', message: `account ${gone} has been deleted` });
  t.equal(await redeemedBy(app, code), null, 'the code stays unused for someone else');

  const joined = await app.call('POST', '/domains/acme/join', { as: { sub: gone } });
  t.equal(joined.status, 403, joined.text);
  t.match(joined.json, { type: 'Forbidden', message: `account ${gone} has been deleted` });

  const created = await app.call('POST', '/domains', { as: { sub: gone }, body: { name: 'ghost-town', displayName: 'Ghost town' } });
  t.equal(created.status, 403, created.text);
  const sub = await app.call('POST', '/domains/acme/subdomains', { as: admin(gone, 'acme'), body: { name: 'acme-ghost', displayName: 'Ghost' } });
  t.equal(sub.status, 403, sub.text);
  const domains = await app.pool.query("SELECT count(*)::int AS n FROM domains WHERE name IN ('ghost-town', 'acme-ghost')");
  t.equal(domains.rows[0].n, 0, 'no domain is created for a deleted account');

  const invited = await app.call('POST', '/domains/acme/invite', { as: admin(owner, 'acme'), body: { accountId: gone.toUpperCase(), role: 'member' } });
  t.equal(invited.status, 409, invited.text);
  t.match(invited.json, { type: 'Conflict', message: `account ${gone} has been deleted` });

  const provisioned = await app.signed('POST', '/internal/provision', JSON.stringify({ accountId: gone, domainName: 'acme', role: 'member' }));
  t.equal(provisioned.status, 409, provisioned.text);
  t.match(provisioned.json, { type: 'Conflict', message: `account ${gone} has been deleted` });

  const ensured = await app.signed('POST', '/internal/domains', JSON.stringify({ name: 'ghost-org', displayName: 'Ghost org', adminAccountId: gone }));
  t.equal(ensured.status, 409, ensured.text);
  t.match(ensured.json, { type: 'Conflict', message: `account ${gone} has been deleted` });
  t.notOk(await app.store.findDomain('ghost-org'), 'nor a provisioned domain it would administer');

  t.equal(await membershipsOf(app, gone), 0, 'the deleted account has no membership');
  const other = await app.call('POST', `/invite-codes/${code}/redeem`, { as: { sub: newAccount() } });
  t.equal(other.status, 201, 'the code still serves a live account');
});
