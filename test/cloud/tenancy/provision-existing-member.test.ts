import t from 'tap';
import { createDomain, newAccount, startTenancy } from './support/harness.js';

// The seed says only "member added" for /internal/provision, which claims-gateway calls on first login.
// An existing membership is kept as it is, and the answer shows it as stored: a request for another role
// or externalId neither changes it nor is refused (a login must not fail on it).
t.test('provisioning an existing member keeps the membership and answers it as stored', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const provision = (body: Record<string, unknown>) => app.signed('POST', '/internal/provision', JSON.stringify({ domainName: 'acme', ...body }));

  const demote = await provision({ accountId: owner, role: 'viewer', externalId: 'idp|1' });
  t.equal(demote.status, 200);
  t.match(demote.json, { accountId: owner, domainName: 'acme', role: 'business_admin', joinedVia: 'local' }, 'the creator is still business_admin, and the answer says so');
  t.notOk('externalId' in (demote.json as object), 'no externalId was stored');

  const bo = newAccount();
  const first = await provision({ accountId: bo, role: 'member', externalId: 'idp|42' });
  t.equal(first.status, 200);
  for (const body of [
    { accountId: bo, role: 'member', externalId: 'idp|43' },
    { accountId: bo, role: 'business_admin', externalId: 'idp|42' },
    { accountId: bo, role: 'member' },
    { accountId: bo, role: 'member', externalId: 'idp|42', joinedVia: 'invite' },
  ]) {
    const again = await provision(body);
    t.equal(again.status, 200, JSON.stringify(body));
    t.equal(again.text, first.text, 'answered exactly like the call that created it');
  }
  const stored = await app.pool.query('SELECT role, external_id, joined_via FROM memberships WHERE account_id = $1', [bo]);
  t.same(stored.rows, [{ role: 'member', external_id: 'idp|42', joined_via: 'local' }], 'nothing was changed');
});
