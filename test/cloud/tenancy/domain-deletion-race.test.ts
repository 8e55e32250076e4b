import t from 'tap';
import { untilSessionsWaitForLocks } from '../../support/stack.js';
import { createDomain, newAccount, startTenancy, type Answer, type TenancyUnderTest } from './support/harness.js';

/**
 * No route deletes a domain, but an operator may, and the schema cascades the deletion to children,
 * memberships and codes. A request racing that deletion must answer as if it came just before or just
 * after it: never a 500 from the foreign key, never a deadlock.
 */

const admin = (sub: string, domain: string) => ({ sub, memberships: [{ domainName: domain, role: 'business_admin' }] });


/** Runs `request` while another transaction deletes `domain`, which commits once the request waits on it. */
async function duringDeletion(app: TenancyUnderTest, domain: string, request: () => Promise<Answer>): Promise<Answer> {
  const deleter = await app.pool.connect();
  try {
    await deleter.query('BEGIN');
    await deleter.query('DELETE FROM domains WHERE name = $1', [domain]);
    const answer = request();
    await untilSessionsWaitForLocks(app.pool, 1);
    await deleter.query('COMMIT');
    return await answer;
  } finally {
    deleter.release();
  }
}

t.test('creating an invite code for a domain being deleted is 404, not a foreign-key 500', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const created = await duringDeletion(app, 'acme', () => app.call('POST', '/domains/acme/invite-codes', { as: admin(owner, 'acme'), body: { role: 'member' } }));
  t.equal(created.status, 404, created.text);
  const codes = await app.pool.query('SELECT count(*)::int AS n FROM invite_codes');
  t.equal(codes.rows[0].n, 0, 'no code outlives its domain');
});

t.test('creating a subdomain under a parent being deleted is 404, not a foreign-key 500', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const created = await duringDeletion(app, 'acme', () =>
    app.call('POST', '/domains/acme/subdomains', { as: admin(owner, 'acme'), body: { name: 'acme-east', displayName: 'East' } }),
  );
  t.equal(created.status, 404, created.text);
  const orphans = await app.pool.query("SELECT count(*)::int AS n FROM domains WHERE name = 'acme-east'");
  t.equal(orphans.rows[0].n, 0, 'no child outlives its parent');
});

t.test('provisioning a subdomain under a parent being deleted is 404, not a foreign-key 500', async (t) => {
  const app = await startTenancy(t);
  await createDomain(app, newAccount(), { name: 'acme' });
  const body = JSON.stringify({ name: 'acme-west', displayName: 'West', parentName: 'acme' });
  const created = await duringDeletion(app, 'acme', () => app.signed('POST', '/internal/domains', body));
  t.equal(created.status, 404, created.text);
});

t.test('a provisioning retry meeting an operator deleting its domain creates it afresh, not a foreign-key 500', async (t) => {
  const app = await startTenancy(t);
  const orgAdmin = newAccount();
  const body = JSON.stringify({ name: 'initech', displayName: 'Initech', adminAccountId: orgAdmin });
  const first = await app.signed('POST', '/internal/domains', body);
  t.match(first, { status: 200, json: { name: 'initech' } }, 'the first call creates it');
  // The operator's deletion holds the row while the retry finds the name taken, then deletes and commits.
  // The retry must wait for it (read FOR KEY SHARE): read without a lock, the row it went on with could be
  // gone by the membership's insert, a foreign-key 500.
  const deleter = await app.pool.connect();
  t.teardown(() => deleter.release());
  await deleter.query('BEGIN');
  await deleter.query("SELECT id FROM domains WHERE name = 'initech' FOR UPDATE");
  const retry = app.signed('POST', '/internal/domains', body);
  await untilSessionsWaitForLocks(app.pool, 1);
  await deleter.query("DELETE FROM domains WHERE name = 'initech'");
  await deleter.query('COMMIT');
  const answer = await retry;
  t.match(answer, { status: 200, json: { name: 'initech' } }, 'the retry answers as a first call would');
  const stored = await app.pool.query(
    "SELECT m.role FROM memberships m JOIN domains d ON d.id = m.domain_id WHERE d.name = 'initech' AND m.account_id = $1",
    [orgAdmin],
  );
  t.same(stored.rows, [{ role: 'business_admin' }], 'created again, with its administrator');
});

t.test('redeeming a code whose domain is being deleted answers that the code is invalid', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const code = ((await app.call('POST', '/domains/acme/invite-codes', { as: admin(owner, 'acme'), body: { role: 'member' } })).json as { code: string }).code;
  const redeemed = await duringDeletion(app, 'acme', () => app.call('POST', `/invite-codes/${code}/redeem`, { as: { sub: newAccount() } }));
  t.equal(redeemed.status, 404, redeemed.text);
  t.same(redeemed.json, { type: 'Not Found', message: 'invalid invite code' });
});

t.test('a redemption under way when its domain is deleted finishes first; neither side deadlocks', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const code = ((await app.call('POST', '/domains/acme/invite-codes', { as: admin(owner, 'acme'), body: { role: 'member' } })).json as { code: string }).code;

  // A gate between redemption's two statements: the code is marked, the membership not yet added.
  // The deletion then starts exactly there, which is where it deadlocked.
  const GATE = 7_310_042;
  await app.pool.query(`
    CREATE FUNCTION test_redeem_gate() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM pg_advisory_xact_lock(${GATE}); RETURN NULL; END $$;
    CREATE TRIGGER test_redeem_gate AFTER UPDATE ON invite_codes FOR EACH ROW EXECUTE FUNCTION test_redeem_gate();`);
  const gate = await app.pool.connect();
  const deleter = await app.pool.connect();
  try {
    await gate.query('SELECT pg_advisory_lock($1)', [GATE]);
    const redeemer = newAccount();
    const redeeming = app.call('POST', `/invite-codes/${code}/redeem`, { as: { sub: redeemer } });
    await untilSessionsWaitForLocks(app.pool, 1);
    await deleter.query('BEGIN');
    const deleting = deleter.query('DELETE FROM domains WHERE name = $1', ['acme']).then(
      () => 'deleted',
      (err: Error & { code?: string }) => `failed: ${err.code ?? err.message}`,
    );
    await untilSessionsWaitForLocks(app.pool, 2);
    await gate.query('SELECT pg_advisory_unlock($1)', [GATE]);
    const redeemed = await redeeming;
    t.equal(redeemed.status, 201, `the redemption completes (${redeemed.text})`);
    t.equal(await deleting, 'deleted', 'the deletion completes after it');
    await deleter.query('COMMIT');
  } finally {
    gate.release();
    deleter.release();
  }
  const left = await app.pool.query('SELECT (SELECT count(*) FROM domains)::int AS domains, (SELECT count(*) FROM memberships)::int AS memberships');
  t.same(left.rows, [{ domains: 0, memberships: 0 }], 'the deletion took the new membership with it');
});
