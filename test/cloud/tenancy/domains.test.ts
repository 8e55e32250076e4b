import t from 'tap';
import { createDomain, newAccount, planOf, startTenancy } from './support/harness.js';

t.test('creating a domain makes the creator its business_admin', async (t) => {
  const app = await startTenancy(t);
  const ana = newAccount();
  const created = await app.call('POST', '/domains', { as: { sub: ana }, body: { name: 'acme', displayName: 'Acme Corp' } });
  t.equal(created.status, 201);
  const domain = created.json as Record<string, unknown>;
  t.match(domain, { name: 'acme', displayName: 'Acme Corp', joinPolicy: 'invite-only', isPublic: false, id: /^[0-9a-f-]{36}$/ });
  t.ok(!Number.isNaN(Date.parse(String(domain.createdAt))), 'createdAt is an ISO timestamp');
  t.notOk('parentId' in domain, 'a root domain carries no parentId');
  t.notOk('memberCount' in domain);
  const mine = await app.call('GET', '/me/memberships', { as: { sub: ana } });
  t.same(mine.json, [{ accountId: ana, domainId: domain.id, domainName: 'acme', role: 'business_admin', joinedVia: 'local' }]);
});

t.test('a duplicate name is 409 and stores nothing', async (t) => {
  const app = await startTenancy(t);
  const ana = newAccount();
  const bo = newAccount();
  await createDomain(app, ana, { name: 'acme' });
  const again = await app.call('POST', '/domains', { as: { sub: bo }, body: { name: 'acme', displayName: 'Other' } });
  t.equal(again.status, 409);
  t.match(again.json, { type: 'Conflict', message: /already taken/ });
  t.same((await app.call('GET', '/me/memberships', { as: { sub: bo } })).json, [], 'the loser joined nothing');
});

t.test('bad bodies are 400 naming every problem', async (t) => {
  const app = await startTenancy(t);
  const ana = newAccount();
  const bad = await app.call('POST', '/domains', { as: { sub: ana }, body: { name: '-Bad_Name', displayName: '', joinPolicy: 'open', isPublic: 'yes', colour: 'red' } });
  t.equal(bad.status, 400);
  const body = bad.json as { type: string; errors: string[] };
  t.equal(body.type, 'Validation Error');
  t.match(body.errors.join('\n'), /name: expected a domain name/);
  t.match(body.errors.join('\n'), /displayName: expected a non-empty string/);
  t.match(body.errors.join('\n'), /joinPolicy: expected one of "open-via-idp", "invite-only"/);
  t.match(body.errors.join('\n'), /isPublic: expected a boolean/);
  t.match(body.errors.join('\n'), /colour: not a field of this request/);
  for (const name of ['', 'a'.repeat(64), 'UPPER', 'with space', 'dot.ted']) {
    const r = await app.call('POST', '/domains', { as: { sub: ana }, body: { name, displayName: 'x' } });
    t.equal(r.status, 400, `name ${JSON.stringify(name)}`);
  }
  t.equal((await app.call('POST', '/domains', { as: { sub: ana }, body: { name: 'a'.repeat(63), displayName: 'x' } })).status, 201, '63 characters is fine');
  const malformed = await app.call('POST', '/domains', { as: { sub: ana }, body: '{"name":' });
  t.equal(malformed.status, 400);
  t.match(malformed.json, { type: 'Validation Error' });
  const notObject = await app.call('POST', '/domains', { as: { sub: ana }, body: '[1]' });
  t.equal(notObject.status, 400);
  t.match(notObject.json, { message: 'request body: expected a JSON object' });
  const tooBig = await app.call('POST', '/domains', { as: { sub: ana }, body: JSON.stringify({ name: 'big', displayName: 'x'.repeat(1_100_000) }) });
  t.equal(tooBig.status, 413);
  // PostgreSQL text cannot hold NUL: it must be refused by name, not reach the database as a 500.
  const nul = await app.call('POST', '/domains', { as: { sub: ana }, body: { name: 'nul', displayName: 'Acme\u0000Corp' } });
  t.equal(nul.status, 400, 'a NUL character in displayName');
  t.match(nul.json, { type: 'Validation Error', message: /^displayName: expected a non-empty string of at most 256 characters, without NUL/ });
  t.equal(await app.store.findDomain('nul'), undefined, 'nothing stored');
});

t.test('end-user routes answer 401 without valid claims, and a system subject cannot create domains', async (t) => {
  const app = await startTenancy(t);
  for (const [method, path] of [
    ['GET', '/domains'],
    ['POST', '/domains'],
    ['GET', '/me/memberships'],
    ['POST', '/domains/acme/join'],
    ['POST', '/domains/acme/invite'],
    ['DELETE', `/domains/acme/members/${newAccount()}`],
    ['GET', '/domains/acme/subdomains'],
    ['POST', '/domains/acme/subdomains'],
    ['POST', '/domains/acme/invite-codes'],
    ['POST', `/invite-codes/${'a'.repeat(32)}/redeem`],
  ] as const) {
    const missing = await app.call(method, path);
    t.equal(missing.status, 401, `${method} ${path} without claims`);
    t.match(missing.json, { type: 'Unauthorized' });
    const garbage = await app.call(method, path, { headers: { 'x-gateway-claims': '%%%' } });
    t.equal(garbage.status, 401, `${method} ${path} with garbage claims`);
    if (method === 'GET') continue;
    const badBody = await app.call(method, path, { body: '{' });
    t.equal(badBody.status, 401, `${method} ${path} without claims and a body that is not JSON: the body is not read`);
    const bigBody = await app.call(method, path, { body: JSON.stringify({ x: 'x'.repeat(1_100_000) }) });
    t.equal(bigBody.status, 401, `${method} ${path} without claims and a body over the limit`);
  }
  t.equal((await app.call('POST', '/nope', { body: '{' })).status, 404, 'an unknown path is 404 whatever its body');
  const system = await app.call('POST', '/domains', { as: { sub: 'system:provisioner' }, body: { name: 'sys', displayName: 'x' } });
  t.equal(system.status, 403);
  t.same((await app.call('GET', '/me/memberships', { as: { sub: 'system:provisioner' } })).json, []);
  t.equal((await app.call('GET', '/health')).status, 200, '/health needs nothing');
  t.equal((await app.call('GET', '/nope', { as: { sub: newAccount() } })).status, 404);
});

t.test('the public listing: public domains only, member counts, parentId only on subdomains, keyset pages', async (t) => {
  const app = await startTenancy(t);
  const ana = newAccount();
  await createDomain(app, ana, { name: 'alpha', isPublic: true });
  await createDomain(app, ana, { name: 'bravo', isPublic: false });
  await createDomain(app, ana, { name: 'charlie', isPublic: true, joinPolicy: 'open-via-idp' });
  for (let i = 0; i < 3; i++) t.equal((await app.call('POST', '/domains/charlie/join', { as: { sub: newAccount() } })).status, 201);
  const child = await app.call('POST', '/domains/alpha/subdomains', {
    as: { sub: ana, memberships: [{ domainName: 'alpha', role: 'business_admin' }] },
    body: { name: 'alpha-east', displayName: 'Alpha East', isPublic: true },
  });
  t.equal(child.status, 201);
  // A public domain whose only member left: its count is zero and is omitted.
  await createDomain(app, ana, { name: 'delta', isPublic: true });
  await app.pool.query("DELETE FROM memberships m USING domains d WHERE d.id = m.domain_id AND d.name = 'delta'");

  const all = await app.call('GET', '/domains', { as: { sub: newAccount() } });
  t.equal(all.status, 200);
  const listed = all.json as Record<string, unknown>[];
  t.same(
    listed.map((d) => d.name),
    ['alpha', 'alpha-east', 'charlie', 'delta'],
    'public only, in name order',
  );
  const byName = Object.fromEntries(listed.map((d) => [d.name, d]));
  t.equal(byName.alpha?.memberCount, 1);
  t.equal(byName.charlie?.memberCount, 4);
  t.notOk('memberCount' in (byName.delta ?? {}), 'memberCount omitted when zero');
  t.notOk('parentId' in (byName.alpha ?? {}), 'no parentId on a root domain');
  t.equal(byName['alpha-east']?.parentId, byName.alpha?.id, 'parentId on a subdomain');
  t.equal(all.headers.link, undefined, 'no next page when the page is not full');

  const first = await app.call('GET', '/domains?limit=2', { as: { sub: ana } });
  t.same((first.json as { name: string }[]).map((d) => d.name), ['alpha', 'alpha-east']);
  t.equal(first.headers.link, '</domains?after=alpha-east&limit=2>; rel="next"');
  const second = await app.call('GET', '/domains?after=alpha-east&limit=2', { as: { sub: ana } });
  t.same((second.json as { name: string }[]).map((d) => d.name), ['charlie', 'delta']);
  const third = await app.call('GET', '/domains?after=delta&limit=2', { as: { sub: ana } });
  t.same(third.json, []);

  for (const query of ['limit=0', 'limit=501', 'limit=abc', 'after=BAD', 'limit=1&limit=2']) {
    const r = await app.call('GET', `/domains?${query}`, { as: { sub: ana } });
    t.equal(r.status, 400, query);
  }
});

t.test('the listing query pages by keyset and counts with one grouped join', async (t) => {
  const { PUBLIC_DOMAINS_SQL, PUBLIC_SUBDOMAINS_SQL, SUBDOMAINS_SQL } = await import('../../../cloud/tenancy/pg-store.js');
  for (const sql of [PUBLIC_DOMAINS_SQL, SUBDOMAINS_SQL, PUBLIC_SUBDOMAINS_SQL]) {
    t.notMatch(sql, /OFFSET/i, 'no OFFSET');
    t.match(sql, /d\.name > \$1/, 'keyset predicate');
    t.match(sql, /GROUP BY m\.domain_id/, 'one grouped count');
    t.notMatch(sql, /SELECT count\(\*\) FROM memberships WHERE/i, 'no per-row count subquery');
  }
  const app = await startTenancy(t);
  const ana = newAccount();
  const values = Array.from({ length: 2000 }, (_, i) => `('d${String(i).padStart(4, '0')}', 'D', ${i % 2 === 0})`).join(',');
  await app.pool.query(`INSERT INTO domains (name, display_name, is_public) VALUES ${values}`);
  await app.pool.query(`INSERT INTO memberships (account_id, domain_id, role) SELECT $1, id, 'member' FROM domains`, [ana]);
  await app.pool.query('ANALYZE domains; ANALYZE memberships');
  const plan = await planOf(app.pool, PUBLIC_DOMAINS_SQL, ['d1000', 20]);
  t.ok(plan.some((n) => n.index === 'domains_public_name_idx'), 'the page comes from the public-name index');
  t.notOk(plan.some((n) => n.type === 'Seq Scan' && n.relation === 'domains'), 'domains are not scanned');
  const page = await app.call('GET', '/domains?after=d1000&limit=3', { as: { sub: ana } });
  t.same((page.json as { name: string; memberCount: number }[]).map((d) => [d.name, d.memberCount]), [
    ['d1002', 1],
    ['d1004', 1],
    ['d1006', 1],
  ]);
  const whole = await app.call('GET', '/domains', { as: { sub: ana } });
  const names = (whole.json as { name: string }[]).map((d) => d.name);
  t.equal(names.filter((n) => /^d\d{4}$/.test(n)).length, 1000, 'without limit, every public domain, not a first page');
  t.equal(names.at(-1), 'd1998');
  t.equal(whole.headers.link, undefined, 'and no next page');
  const rest = await app.call('GET', '/domains?after=d1900', { as: { sub: ana } });
  t.equal((rest.json as unknown[]).length, 49, 'after alone: everything after it');
});

t.test('subdomains: direct children only; creating one needs CanManageDomain on the parent', async (t) => {
  const app = await startTenancy(t);
  const ana = newAccount();
  const root = await createDomain(app, ana, { name: 'root' });
  const asAdmin = (domain: string) => ({ sub: ana, memberships: [{ domainName: domain, role: 'business_admin' }] });
  const east = await app.call('POST', '/domains/root/subdomains', { as: asAdmin('root'), body: { name: 'east', displayName: 'East' } });
  t.equal(east.status, 201);
  t.match(east.json, { name: 'east', parentId: root.id });
  t.equal((await app.call('POST', '/domains/root/subdomains', { as: asAdmin('root'), body: { name: 'west', displayName: 'West' } })).status, 201);
  t.equal((await app.call('POST', '/domains/east/subdomains', { as: asAdmin('east'), body: { name: 'east-lab', displayName: 'Lab' } })).status, 201);

  const children = await app.call('GET', '/domains/root/subdomains', { as: { sub: newAccount(), memberships: [{ domainName: 'root', role: 'viewer' }] } });
  t.equal(children.status, 200);
  t.same((children.json as { name: string }[]).map((d) => d.name), ['east', 'west'], 'grandchildren are not listed');
  t.match((children.json as Record<string, unknown>[])[0], { memberCount: 1, parentId: root.id });
  const stranger = await app.call('GET', '/domains/root/subdomains', { as: { sub: newAccount() } });
  t.same(stranger.json, [], 'a caller who is no member of the parent sees no private child (private-subdomains.test.ts)');

  const mine = (await app.call('GET', '/me/memberships', { as: { sub: ana } })).json as { domainName: string; role: string }[];
  t.same(mine.map((m) => [m.domainName, m.role]), [
    ['east', 'business_admin'],
    ['east-lab', 'business_admin'],
    ['root', 'business_admin'],
    ['west', 'business_admin'],
  ], 'the creator administers each subdomain');

  const member = await app.call('POST', '/domains/root/subdomains', {
    as: { sub: newAccount(), memberships: [{ domainName: 'root', role: 'facility_manager' }] },
    body: { name: 'north', displayName: 'North' },
  });
  t.equal(member.status, 403);
  t.match(member.json, { type: 'Forbidden' });
  const otherDomainAdmin = await app.call('POST', '/domains/root/subdomains', { as: asAdmin('elsewhere'), body: { name: 'north', displayName: 'North' } });
  t.equal(otherDomainAdmin.status, 403);
  // The store checks the creator's memberships as stored too (stale-token-grants-nothing.test.ts).
  const platform = newAccount();
  await createDomain(app, newAccount(), { name: 'elsewhere' });
  await app.store.addMember('elsewhere', { accountId: platform, role: 'admin', joinedVia: 'invite' }, 'refuse');
  const platformAdmin = await app.call('POST', '/domains/root/subdomains', {
    as: { sub: platform, memberships: [{ domainName: 'elsewhere', role: 'admin' }] },
    body: { name: 'north', displayName: 'North' },
  });
  t.equal(platformAdmin.status, 201, 'a platform admin manages every domain');
  t.equal((await app.call('POST', '/domains/ghost/subdomains', { as: asAdmin('ghost'), body: { name: 'south', displayName: 'S' } })).status, 404);
  t.equal((await app.call('POST', '/domains/root/subdomains', { as: asAdmin('root'), body: { name: 'east', displayName: 'again' } })).status, 409);
  t.equal((await app.call('POST', '/domains/root/subdomains', { as: asAdmin('root'), body: { name: 'x' } })).status, 400);
  t.equal((await app.call('GET', '/domains/ghost/subdomains', { as: { sub: ana } })).status, 404);
  t.equal((await app.call('GET', '/domains/NOT_A_NAME/subdomains', { as: { sub: ana } })).status, 404);
  t.same((await app.call('GET', '/domains/west/subdomains', { as: { sub: ana } })).json, [], 'a leaf has no children');

  const firstPage = await app.call('GET', '/domains/root/subdomains?limit=1', { as: asAdmin('root') });
  t.same((firstPage.json as { name: string }[]).map((d) => d.name), ['east']);
  t.equal(firstPage.headers.link, '</domains/root/subdomains?after=east&limit=1>; rel="next"', 'children page by keyset too');
  const nextPage = await app.call('GET', '/domains/root/subdomains?after=east&limit=1', { as: asAdmin('root') });
  t.same((nextPage.json as { name: string }[]).map((d) => d.name), ['north']);
  for (const query of ['limit=0', 'after=BAD']) {
    const bad = await app.call('GET', `/domains/root/subdomains?${query}`, { as: { sub: ana } });
    t.equal(bad.status, 400, `subdomains ?${query}`);
    t.match(bad.json, { type: 'Validation Error' });
  }
});
