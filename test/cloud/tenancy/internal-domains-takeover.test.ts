import t from 'tap';
import { createDomain, newAccount, startTenancy } from './support/harness.js';

t.test('POST /internal/domains never adopts a domain an end user created under the same name', async (t) => {
  const app = await startTenancy(t);
  // Any account may create a root domain: a stranger takes the name a new organization will get,
  // with exactly the attributes the provisioner will ask for.
  const stranger = newAccount();
  const squatted = await createDomain(app, stranger, { name: 'globex', displayName: 'Globex' });
  const orgAdmin = newAccount();

  const withAdmin = await app.signed('POST', '/internal/domains', JSON.stringify({ name: 'globex', displayName: 'Globex', adminAccountId: orgAdmin }));
  t.equal(withAdmin.status, 409, 'the organization does not get the stranger\'s domain');
  t.match(withAdmin.json, { type: 'Conflict' });
  t.same((await app.signed('GET', `/internal/memberships?accountId=${orgAdmin}`)).json, [], 'its administrator joined nothing');
  const withoutAdmin = await app.signed('POST', '/internal/domains', JSON.stringify({ name: 'globex', displayName: 'Globex' }));
  t.equal(withoutAdmin.status, 409, 'nor without an administrator, whom a later provision would add to it');

  // The stranger's subdomain is theirs too, under a parent of their own.
  const child = await app.call('POST', '/domains/globex/subdomains', {
    as: { sub: stranger, memberships: [{ domainName: 'globex', role: 'business_admin' }] },
    body: { name: 'globex-eu', displayName: 'Globex EU' },
  });
  t.equal(child.status, 201);
  t.equal((await app.signed('POST', '/internal/domains', JSON.stringify({ name: 'globex-eu', displayName: 'Globex EU', parentName: 'globex' }))).status, 409);

  const members = await app.pool.query<{ account_id: string }>('SELECT account_id FROM memberships WHERE domain_id = $1', [squatted.id]);
  t.same(members.rows, [{ account_id: stranger }], 'the stranger\'s domain is unchanged');

  // What the provisioner created itself is still recognised when it retries.
  const body = JSON.stringify({ name: 'initech', displayName: 'Initech', adminAccountId: orgAdmin });
  const first = await app.signed('POST', '/internal/domains', body);
  t.equal(first.status, 200);
  const retry = await app.signed('POST', '/internal/domains', body);
  t.equal(retry.status, 200);
  t.equal(retry.text, first.text, 'a retry answers like the first call');
});

t.test('POST /internal/domains never hands a provisioned domain to another administrator', async (t) => {
  const app = await startTenancy(t);
  // Two organizations whose names derived alike ("Umbrella Inc" and "Umbrella, Inc"): the second
  // provisioning call names the same domain, with the same attributes, and another administrator.
  const firstAdmin = newAccount();
  const secondAdmin = newAccount();
  const first = await app.signed('POST', '/internal/domains', JSON.stringify({ name: 'umbrella', displayName: 'Umbrella', adminAccountId: firstAdmin }));
  t.equal(first.status, 200);
  const second = await app.signed('POST', '/internal/domains', JSON.stringify({ name: 'umbrella', displayName: 'Umbrella', adminAccountId: secondAdmin }));
  t.equal(second.status, 409, 'the second organization does not get the first one\'s domain');
  t.match(second.json, { type: 'Conflict' });
  t.same((await app.signed('GET', `/internal/memberships?accountId=${secondAdmin}`)).json, [], 'its administrator joined nothing');
  const none = await app.signed('POST', '/internal/domains', JSON.stringify({ name: 'umbrella', displayName: 'Umbrella' }));
  t.equal(none.status, 409, 'nor is a call naming no administrator its retry');
  const upper = await app.signed('POST', '/internal/domains', JSON.stringify({ name: 'umbrella', displayName: 'Umbrella', adminAccountId: firstAdmin.toUpperCase() }));
  t.equal(upper.status, 200, 'the first call\'s retry is, however its id is spelled');
  t.equal(upper.text, first.text);

  // A domain provisioned with no administrator: its retries name none.
  const bare = JSON.stringify({ name: 'stark', displayName: 'Stark' });
  t.equal((await app.signed('POST', '/internal/domains', bare)).status, 200);
  t.equal((await app.signed('POST', '/internal/domains', bare)).status, 200, 'a retry naming none');
  t.equal((await app.signed('POST', '/internal/domains', JSON.stringify({ name: 'stark', displayName: 'Stark', adminAccountId: secondAdmin }))).status, 409, 'a call naming one is another organization');
  const members = await app.pool.query<{ account_id: string; name: string }>('SELECT m.account_id, d.name FROM memberships m JOIN domains d ON d.id = m.domain_id ORDER BY d.name');
  t.same(members.rows, [{ account_id: firstAdmin, name: 'umbrella' }], 'only the first administrator is a member of anything');
});
