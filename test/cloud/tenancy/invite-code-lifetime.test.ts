import t from 'tap';
import { createDomain, newAccount, startTenancy } from './support/harness.js';

const admin = (sub: string) => ({ sub, memberships: [{ domainName: 'acme', role: 'business_admin' }] });

// Expiry is kept to the millisecond: a positive expiresInHours below about 1.4e-7 rounds to 0 ms and
// once answered 201 with a code that had already expired. The shortest lifetime is now one minute.
t.test('an expiresInHours below one minute is a 400 naming the field, and stores nothing', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  for (const expiresInHours of [Number.MIN_VALUE, 1e-300, 1e-7, 1.4e-7, 1e-4, 0.016]) {
    const r = await app.call('POST', '/domains/acme/invite-codes', { as: admin(owner), body: { role: 'member', expiresInHours } });
    t.equal(r.status, 400, String(expiresInHours));
    t.match(r.json, { type: 'Validation Error', message: /^expiresInHours: expected a number of hours from 0\.0167 \(one minute\) to 8784/ }, String(expiresInHours));
  }
  const stored = await app.pool.query('SELECT count(*)::int AS n FROM invite_codes');
  t.equal(stored.rows[0].n, 0, 'no code stored');

  const shortest = await app.call('POST', '/domains/acme/invite-codes', { as: admin(owner), body: { role: 'member', expiresInHours: 1 / 60 } });
  t.equal(shortest.status, 201, 'one minute is accepted');
  const { rows } = await app.pool.query<{ ms: string }>(`SELECT (extract(epoch FROM expires_at - created_at) * 1000)::bigint AS ms FROM invite_codes`);
  t.equal(Number(rows[0]?.ms), 60_000, 'and expires one minute after creation, both on the database clock');
});

t.test('a one-minute code can be redeemed right away', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const created = await app.call('POST', '/domains/acme/invite-codes', { as: admin(owner), body: { role: 'member', expiresInHours: 1 / 60 } });
  const redeemed = await app.call('POST', `/invite-codes/${(created.json as { code: string }).code}/redeem`, { as: { sub: newAccount() } });
  t.equal(redeemed.status, 201);
});
