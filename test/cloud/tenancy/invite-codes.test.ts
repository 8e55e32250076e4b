import t from 'tap';
import { REDEEM_SQL } from '../../../cloud/tenancy/pg-store.js';
import { createDomain, newAccount, planOf, startTenancy } from './support/harness.js';

const admin = (sub: string, domain: string) => ({ sub, memberships: [{ domainName: domain, role: 'business_admin' }] });

/** A stored code's life, from its creation to its expiry, both on the database's clock. */
async function lifeOf(app: Awaited<ReturnType<typeof startTenancy>>, code: string) {
  const { rows } = await app.pool.query<{ ms: string; expires_at: Date; created_at: Date }>(
    `SELECT (extract(epoch FROM expires_at - created_at) * 1000)::bigint AS ms, expires_at, created_at FROM invite_codes WHERE code = $1`,
    [code],
  );
  return { ms: Number(rows[0]?.ms), expiresAt: rows[0]?.expires_at.toISOString() };
}

t.test('a manager creates a 32-hex code that lives 7 days by default', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const created = await app.call('POST', '/domains/acme/invite-codes', { as: admin(owner, 'acme'), body: { role: 'member' } });
  t.equal(created.status, 201);
  const code = created.json as { code: string; domainName: string; role: string; expiresAt: string };
  t.match(code, { code: /^[0-9a-f]{32}$/, domainName: 'acme', role: 'member' });
  // The expiry is asserted exactly against the creation time, never against the time the request took.
  const life = await lifeOf(app, code.code);
  t.equal(life.ms, 7 * 24 * 3_600_000, 'expires a week after its creation, on the clock redemption checks it by');
  t.equal(life.expiresAt, code.expiresAt, 'the stored expiry is the one answered');
  const short = await app.call('POST', '/domains/acme/invite-codes', { as: admin(owner, 'acme'), body: { role: 'viewer', expiresInHours: 2 } });
  t.equal((await lifeOf(app, (short.json as { code: string }).code)).ms, 2 * 3_600_000, 'expiresInHours is honoured');

  const codes = new Set<string>();
  for (let i = 0; i < 20; i++) {
    const r = await app.call('POST', '/domains/acme/invite-codes', { as: admin(owner, 'acme'), body: { role: 'member' } });
    codes.add((r.json as { code: string }).code);
  }
  t.equal(codes.size, 20, 'every code is fresh');
  const row = await app.pool.query('SELECT created_by, redeemed_by FROM invite_codes WHERE code = $1', [code.code]);
  t.same(row.rows, [{ created_by: owner, redeemed_by: null }]);
});

t.test('creating codes: reject paths', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const member = { sub: newAccount(), memberships: [{ domainName: 'acme', role: 'member' }] };
  t.equal((await app.call('POST', '/domains/acme/invite-codes', { as: member, body: { role: 'viewer' } })).status, 403);
  t.equal((await app.call('POST', '/domains/acme/invite-codes', { as: admin(owner, 'acme'), body: { role: 'admin' } })).status, 403, 'no escalation');
  for (const body of [{}, { role: 'owner' }, { role: 'member', expiresInHours: 0 }, { role: 'member', expiresInHours: -1 }, { role: 'member', expiresInHours: 1e9 }, { role: 'member', expiresInHours: '5' }, { role: 'member', uses: 3 }]) {
    t.equal((await app.call('POST', '/domains/acme/invite-codes', { as: admin(owner, 'acme'), body })).status, 400, JSON.stringify(body));
  }
  t.equal((await app.call('POST', '/domains/ghost/invite-codes', { as: admin(owner, 'ghost'), body: { role: 'member' } })).status, 404);
  t.equal((await app.call('POST', '/domains/acme/invite-codes', { as: { sub: 'system:x', memberships: [{ domainName: 'acme', role: 'admin' }] }, body: { role: 'member' } })).status, 403);
  const stored = await app.pool.query('SELECT count(*)::int AS n FROM invite_codes');
  t.equal(stored.rows[0].n, 0, 'nothing stored by any refused request');
});

t.test('redeeming joins the caller once; unknown, expired and redeemed codes get one identical answer', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const make = async () => ((await app.call('POST', '/domains/acme/invite-codes', { as: admin(owner, 'acme'), body: { role: 'facility_manager' } })).json as { code: string }).code;

  const code = await make();
  const bo = newAccount();
  const redeemed = await app.call('POST', `/invite-codes/${code}/redeem`, { as: { sub: bo } });
  t.equal(redeemed.status, 201);
  t.match(redeemed.json, { accountId: bo, domainName: 'acme', role: 'facility_manager', joinedVia: 'invite' });
  const row = await app.pool.query('SELECT redeemed_by, redeemed_at IS NOT NULL AS marked FROM invite_codes WHERE code = $1', [code]);
  t.same(row.rows, [{ redeemed_by: bo, marked: true }]);

  const expired = await make();
  await app.pool.query("UPDATE invite_codes SET expires_at = now() - interval '1 second' WHERE code = $1", [expired]);

  const answers = [
    await app.call('POST', `/invite-codes/${code}/redeem`, { as: { sub: newAccount() } }),
    await app.call('POST', `/invite-codes/${expired}/redeem`, { as: { sub: newAccount() } }),
    await app.call('POST', `/invite-codes/${'0'.repeat(32)}/redeem`, { as: { sub: newAccount() } }),
    await app.call('POST', '/invite-codes/not-even-hex/redeem', { as: { sub: newAccount() } }),
    await app.call('POST', `/invite-codes/${code.toUpperCase()}/redeem`, { as: { sub: newAccount() } }),
  ];
  for (const answer of answers) {
    t.equal(answer.status, 404);
    t.equal(answer.text, answers[0]?.text, 'identical body');
    t.equal(answer.headers['content-type'], answers[0]?.headers['content-type']);
  }
  t.same(answers[0]?.json, { type: 'Not Found', message: 'invalid invite code' });
  const expiredRow = await app.pool.query('SELECT redeemed_by FROM invite_codes WHERE code = $1', [expired]);
  t.same(expiredRow.rows, [{ redeemed_by: null }], 'an expired code is never marked');
});

t.test('a member redeeming a code for their own domain is 409 and the code stays usable', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const code = ((await app.call('POST', '/domains/acme/invite-codes', { as: admin(owner, 'acme'), body: { role: 'member' } })).json as { code: string }).code;
  const self = await app.call('POST', `/invite-codes/${code}/redeem`, { as: { sub: owner } });
  t.equal(self.status, 409);
  const row = await app.pool.query('SELECT redeemed_by FROM invite_codes WHERE code = $1', [code]);
  t.same(row.rows, [{ redeemed_by: null }], 'rolled back: not marked');
  const mine = (await app.call('GET', '/me/memberships', { as: { sub: owner } })).json as { role: string }[];
  t.same(mine.map((m) => m.role), ['business_admin'], 'the existing role is untouched');
  t.equal((await app.call('POST', `/invite-codes/${code}/redeem`, { as: { sub: newAccount() } })).status, 201, 'someone new can still use it');
  t.equal((await app.call('POST', `/invite-codes/${code}/redeem`, { as: { sub: 'system:x' } })).status, 403, 'a system subject redeems nothing');
});

t.test('the redeem statement compares the code with its column type, so it uses the unique index', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  await app.pool.query(
    `INSERT INTO invite_codes (domain_id, code, role, created_by, expires_at)
     SELECT d.id, md5(g::text), 'member', $1, now() + interval '1 day' FROM domains d, generate_series(1, 5000) g WHERE d.name = 'acme'`,
    [owner],
  );
  await app.pool.query('ANALYZE invite_codes');
  // EXPLAIN plans the statement with its parameters bound exactly as the store sends them.
  const plan = await planOf(app.pool, REDEEM_SQL, ['0123456789abcdef0123456789abcdef', owner]);
  t.ok(plan.some((n) => n.relation === 'invite_codes' && n.index === 'invite_codes_code_key'), 'looked up through the unique index');
  t.notOk(plan.some((n) => n.type === 'Seq Scan'), 'no sequential scan');
  // What the test guards against: the same lookup with a cast on the column side cannot use the index.
  const castPlan = await planOf(app.pool, 'SELECT 1 FROM invite_codes WHERE code::uuid = $1::uuid', ['0123456789abcdef0123456789abcdef']);
  t.ok(castPlan.some((n) => n.type === 'Seq Scan'), 'a mismatched type would scan');
});
