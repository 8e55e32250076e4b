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

t.test('POST /internal/domains recognises a retry of a domain provisioned before its administrator was recorded', async (t) => {
  const app = await startTenancy(t);
  // As a replica of the previous revision provisions during a rolling deploy (and as 0007 leaves a
  // domain whose provisioning administrator has no 'local' membership): provisioned, no administrator
  // recorded, the named administrator made business_admin with joined_via 'local'.
  const orgAdmin = newAccount();
  const oldReplica = async (name: string, displayName: string, admin?: string) => {
    const id = (await app.pool.query<{ id: string }>("INSERT INTO domains (name, display_name, provisioned) VALUES ($1, $2, true) RETURNING id", [name, displayName])).rows[0]!.id;
    if (admin !== undefined) await app.pool.query("INSERT INTO memberships (account_id, domain_id, role, joined_via) VALUES ($1, $2, 'business_admin', 'local')", [admin, id]);
    return id;
  };
  const recorded = async (name: string) => (await app.pool.query<{ provisioned_admin: string | null }>('SELECT provisioned_admin FROM domains WHERE name = $1', [name])).rows[0]?.provisioned_admin;

  await oldReplica('wayne', 'Wayne', orgAdmin);
  const body = JSON.stringify({ name: 'wayne', displayName: 'Wayne', adminAccountId: orgAdmin });
  const retry = await app.signed('POST', '/internal/domains', body);
  t.equal(retry.status, 200, `the retry on a new replica is a retry: ${retry.text}`);
  t.equal(await recorded('wayne'), orgAdmin, 'and records the administrator');
  const again = await app.signed('POST', '/internal/domains', body);
  t.equal(again.status, 200);
  t.equal(again.text, retry.text, 'answered like the retry before it');
  t.equal((await app.signed('POST', '/internal/domains', JSON.stringify({ name: 'wayne', displayName: 'Wayne', adminAccountId: newAccount() }))).status, 409, 'another administrator is another organization');
  t.equal((await app.signed('POST', '/internal/domains', JSON.stringify({ name: 'wayne', displayName: 'Wayne' }))).status, 409, 'and a call naming none is no retry of it any more');

  // Provisioned with no administrator; one joined later by invite. A call naming her is no retry, and
  // leaves the real retry (naming none) recognised.
  const bare = await oldReplica('oscorp', 'Oscorp');
  const invited = newAccount();
  await app.pool.query("INSERT INTO memberships (account_id, domain_id, role, joined_via) VALUES ($1, $2, 'business_admin', 'invite')", [invited, bare]);
  t.equal((await app.signed('POST', '/internal/domains', JSON.stringify({ name: 'oscorp', displayName: 'Oscorp', adminAccountId: invited }))).status, 409, 'an invited administrator is not the one it was provisioned for');
  t.equal(await recorded('oscorp'), null, 'nothing recorded');
  t.equal((await app.signed('POST', '/internal/domains', JSON.stringify({ name: 'oscorp', displayName: 'Oscorp' }))).status, 200, 'the retry naming none still is one');
  // Nor is a call with other attributes a retry, whoever it names.
  await oldReplica('lexcorp', 'LexCorp', orgAdmin);
  t.equal((await app.signed('POST', '/internal/domains', JSON.stringify({ name: 'lexcorp', displayName: 'Lex Corp', adminAccountId: orgAdmin }))).status, 409, 'other attributes are another domain');
  t.equal(await recorded('lexcorp'), null, 'nothing recorded');
});
