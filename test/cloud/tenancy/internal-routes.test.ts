import { createHmac } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import t from 'tap';
import { request } from 'undici';
import { MEMBERSHIPS_OF_MANY_SQL, MEMBERSHIPS_OF_SQL } from '../../../cloud/tenancy/pg-store.js';
import { createDomain, newAccount, planOf, startTenancy } from './support/harness.js';

t.test('HMAC: empty-body GET, trailing whitespace, uppercase hex, missing header, key rotation', async (t) => {
  const previous = 'previous-secret';
  const app = await startTenancy(t, { keys: ['current-secret', previous] });
  const ana = newAccount();
  await createDomain(app, ana, { name: 'acme' });
  const path = `/internal/memberships?accountId=${ana}`;

  const ok = await app.signed('GET', path);
  t.equal(ok.status, 200, 'a GET is signed over empty bytes');
  t.match(ok.json, [{ domainName: 'acme', role: 'business_admin' }]);
  t.equal((await app.signed('GET', path, undefined, previous)).status, 200, 'the previous secret of the ring is still accepted');
  const unknownKey = await app.signed('GET', path, undefined, 'someone-else');
  t.equal(unknownKey.status, 403);
  t.equal(unknownKey.text, 'invalid signature');
  t.match(unknownKey.headers['content-type'], /^text\/plain/);

  const upper = await request(`${app.url}${path}`, { headers: { 'x-signature': createHmac('sha256', 'current-secret').update('').digest('hex').toUpperCase() } });
  t.equal(upper.statusCode, 403, 'uppercase hex is a mismatch');
  t.equal(await upper.body.text(), 'invalid signature');
  const none = await request(`${app.url}${path}`);
  t.equal(none.statusCode, 403, 'no signature');
  t.equal(await none.body.text(), 'invalid signature');
  const wrongLength = await request(`${app.url}${path}`, { headers: { 'x-signature': 'abc' } });
  t.equal(wrongLength.statusCode, 403);
  await wrongLength.body.dump();

  const body = JSON.stringify({ accountId: newAccount(), domainName: 'acme', role: 'member' });
  const padded = `${body} \n`;
  const signedPadded = await app.signed('POST', '/internal/provision', padded);
  t.equal(signedPadded.status, 200, 'trailing whitespace, signed as sent: accepted');
  const signature = createHmac('sha256', 'current-secret').update(body).digest('hex');
  const unsignedPadding = await request(`${app.url}/internal/provision`, {
    method: 'POST',
    headers: { 'x-signature': signature, 'content-type': 'application/json' },
    body: padded,
  });
  t.equal(unsignedPadding.statusCode, 403, 'trailing whitespace the signature does not cover: refused');
  t.equal(await unsignedPadding.body.text(), 'invalid signature');
  const count = await app.pool.query("SELECT count(*)::int AS n FROM memberships m JOIN domains d ON d.id = m.domain_id WHERE d.name = 'acme'");
  t.equal(count.rows[0].n, 2, 'only the signed provision was stored');

  for (const [method, route, payload] of [
    ['POST', '/internal/provision', body],
    ['POST', '/internal/domains', JSON.stringify({ name: 'x', displayName: 'X' })],
  ] as const) {
    const forged = await app.signed(method, route, payload, 'wrong');
    t.equal(forged.status, 403, `${route} refuses a bad signature`);
    t.equal(forged.text, 'invalid signature');
  }
  t.equal((await app.call('GET', path, { as: { sub: ana } })).status, 403, 'claims do not open internal routes');
});

t.test('GET /internal/memberships: the login path and its reject paths', async (t) => {
  const app = await startTenancy(t);
  const ana = newAccount();
  for (const name of ['bravo', 'alpha']) await createDomain(app, ana, { name });
  await app.pool.query("UPDATE memberships SET external_id = 'idp-7' WHERE account_id = $1", [ana]);
  const listed = await app.signed('GET', `/internal/memberships?accountId=${ana.toUpperCase()}`);
  t.equal(listed.status, 200);
  t.match(listed.json, [
    { accountId: ana, domainName: 'alpha', role: 'business_admin', externalId: 'idp-7', joinedVia: 'local' },
    { accountId: ana, domainName: 'bravo' },
  ]);
  t.same((await app.signed('GET', `/internal/memberships?accountId=${newAccount()}`)).json, [], 'an unknown account has none');
  for (const query of ['', '?accountId=', '?accountId=bob', `?accountId=${ana}&accountId=${ana}`]) {
    const bad = await app.signed('GET', `/internal/memberships${query}`);
    t.equal(bad.status, 400, `query ${JSON.stringify(query)}`);
    t.match(bad.json, { type: 'Validation Error', message: /^accountId: expected an account id/ });
  }
});

t.test('the login path is one indexed query', async (t) => {
  const app = await startTenancy(t);
  await app.pool.query(`INSERT INTO domains (name, display_name) SELECT 'd' || g, 'D' FROM generate_series(1, 5000) g`);
  await app.pool.query(`INSERT INTO memberships (account_id, domain_id, role) SELECT gen_random_uuid(), d.id, 'member' FROM domains d, generate_series(1, 10)`);
  await app.pool.query('ANALYZE domains; ANALYZE memberships');
  const plan = await planOf(app.pool, MEMBERSHIPS_OF_SQL, [newAccount()]);
  t.ok(plan.some((n) => n.relation === 'memberships' && n.index === 'memberships_pkey'), 'memberships found through the (account_id, domain_id) key');
  t.notOk(plan.some((n) => n.type === 'Seq Scan'), 'nothing is scanned sequentially');
  // Concurrent logins share one query per batch: still the primary key, never a scan of memberships.
  const batch = Array.from({ length: 32 }, newAccount);
  const manyPlan = await planOf(app.pool, MEMBERSHIPS_OF_MANY_SQL, [batch]);
  t.ok(manyPlan.some((n) => n.index === 'memberships_pkey'), 'a batch uses the same key');
  t.notOk(manyPlan.some((n) => n.type === 'Seq Scan' && n.relation === 'memberships'), 'memberships are not scanned');
});

t.test('concurrent logins each get exactly their own memberships, including writes just made', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  for (const name of ['a1', 'a2', 'a3', 'a4']) await createDomain(app, owner, { name });
  const accounts = Array.from({ length: 40 }, newAccount);
  await Promise.all(
    accounts.map(async (account, i) => {
      for (const name of ['a1', 'a2', 'a3', 'a4'].slice(0, (i % 4) + 1)) {
        await app.store.addMember(name, { accountId: account, role: 'viewer', joinedVia: 'local' }, 'refuse');
      }
    }),
  );
  const answers = await Promise.all(accounts.map((account) => app.signed('GET', `/internal/memberships?accountId=${account}`)));
  answers.forEach((answer, i) => {
    const memberships = answer.json as { accountId: string; domainName: string }[];
    t.equal(memberships.length, (i % 4) + 1, `account ${i}: its own count`);
    t.ok(memberships.every((m) => m.accountId === accounts[i]), `account ${i}: nobody else's`);
  });
  const fresh = newAccount();
  const provisioned = app.signed('POST', '/internal/provision', JSON.stringify({ accountId: fresh, domainName: 'a1', role: 'member' }));
  await provisioned;
  const reads = await Promise.all(Array.from({ length: 16 }, () => app.signed('GET', `/internal/memberships?accountId=${fresh}`)));
  t.ok(reads.every((r) => (r.json as unknown[]).length === 1), 'a read after a write sees it');
});

t.test('the login path reads a body if one is sent, and refuses an oversized one', async (t) => {
  const app = await startTenancy(t);
  const ana = newAccount();
  await createDomain(app, ana, { name: 'acme' });
  const withBody = await app.signed('GET', `/internal/memberships?accountId=${ana}`, '{"ignored":true}');
  t.equal(withBody.status, 200, 'the signature covers the body that was sent');
  const unsignedBody = await request(`${app.url}/internal/memberships?accountId=${ana}`, {
    method: 'GET',
    headers: { 'x-signature': createHmac('sha256', app.secret).update('').digest('hex'), 'content-type': 'application/json' },
    body: 'x',
  });
  t.equal(unsignedBody.statusCode, 403, 'a body the signature does not cover is refused');
  await unsignedBody.body.dump();
  const huge = await app.signed('GET', `/internal/memberships?accountId=${ana}`, 'x'.repeat(1024 * 1024 + 1));
  t.equal(huge.status, 413);
  t.match(huge.json, { type: 'Payload Too Large' });
  const head = await app.signed('POST', `/internal/memberships?accountId=${ana}`);
  t.equal(head.status, 404, 'only GET is a login');
  const gzipped = gzipSync('');
  const encoded = await request(`${app.url}/internal/memberships?accountId=${ana}`, {
    method: 'GET',
    headers: { 'x-signature': createHmac('sha256', app.secret).update(gzipped).digest('hex'), 'content-encoding': 'gzip' },
    body: gzipped,
  });
  t.equal(encoded.statusCode, 400, 'a signed body is never inflated: an encoded one is refused, as on every signed route');
  t.same(await encoded.body.json(), { type: 'Validation Error', message: 'unsupported body encoding' });
});

t.test('POST /internal/provision is idempotent: retries answer the same and store one row', async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const bo = newAccount();
  const body = JSON.stringify({ accountId: bo, domainName: 'acme', role: 'facility_manager', externalId: 'idp|42', joinedVia: 'self-idp' });
  const first = await app.signed('POST', '/internal/provision', body);
  t.equal(first.status, 200);
  t.same(first.json, { accountId: bo, domainId: (first.json as { domainId: string }).domainId, domainName: 'acme', role: 'facility_manager', externalId: 'idp|42', joinedVia: 'self-idp' });
  const replays = await Promise.all(Array.from({ length: 8 }, () => app.signed('POST', '/internal/provision', body)));
  for (const replay of replays) {
    t.equal(replay.status, 200);
    t.equal(replay.text, first.text, 'a replay answers exactly like the first call');
  }
  const rows = await app.pool.query('SELECT count(*)::int AS n FROM memberships WHERE account_id = $1', [bo]);
  t.equal(rows.rows[0].n, 1, 'one row');

  const racing = newAccount();
  const raceBody = JSON.stringify({ accountId: racing, domainName: 'acme', role: 'member' });
  const raced = await Promise.all(Array.from({ length: 16 }, () => app.signed('POST', '/internal/provision', raceBody)));
  t.ok(raced.every((r) => r.status === 200 && r.text === raced[0]?.text), 'concurrent first calls agree');
  t.match(raced[0]?.json, { joinedVia: 'local', role: 'member' });

  t.equal((await app.signed('POST', '/internal/provision', JSON.stringify({ accountId: newAccount(), domainName: 'ghost', role: 'member' }))).status, 404);
  for (const bad of [
    '',
    '{',
    '[]',
    JSON.stringify({ accountId: 'x', domainName: 'acme', role: 'member' }),
    JSON.stringify({ accountId: newAccount(), domainName: 'acme', role: 'root' }),
    JSON.stringify({ accountId: newAccount(), domainName: 'acme', role: 'member', joinedVia: 'magic' }),
    JSON.stringify({ accountId: newAccount(), domainName: 'acme', role: 'member', extra: 1 }),
    JSON.stringify({ accountId: newAccount(), domainName: 'acme', role: 'member', externalId: 'idp\u000042' }),
  ]) {
    const r = await app.signed('POST', '/internal/provision', bad);
    t.equal(r.status, 400, `body ${JSON.stringify(bad)}`);
    t.match(r.json, { type: 'Validation Error' });
  }
});

t.test('POST /internal/domains is idempotent; a different domain under the same name is 409', async (t) => {
  const app = await startTenancy(t);
  const adminId = newAccount();
  const body = JSON.stringify({ name: 'globex', displayName: 'Globex', isPublic: true, adminAccountId: adminId });
  const first = await app.signed('POST', '/internal/domains', body);
  t.equal(first.status, 200);
  t.match(first.json, { name: 'globex', displayName: 'Globex', isPublic: true, joinPolicy: 'invite-only' });
  const replays = await Promise.all(Array.from({ length: 8 }, () => app.signed('POST', '/internal/domains', body)));
  t.ok(replays.every((r) => r.status === 200 && r.text === first.text), 'replays answer exactly like the first call');
  const domains = await app.pool.query("SELECT count(*)::int AS n FROM domains WHERE name = 'globex'");
  t.equal(domains.rows[0].n, 1);
  t.match((await app.signed('GET', `/internal/memberships?accountId=${adminId}`)).json, [{ domainName: 'globex', role: 'business_admin', joinedVia: 'local' }]);
  const members = await app.pool.query('SELECT count(*)::int AS n FROM memberships WHERE account_id = $1', [adminId]);
  t.equal(members.rows[0].n, 1, 'one admin membership');

  const concurrentBody = JSON.stringify({ name: 'initech', displayName: 'Initech' });
  const concurrent = await Promise.all(Array.from({ length: 16 }, () => app.signed('POST', '/internal/domains', concurrentBody)));
  t.ok(concurrent.every((r) => r.status === 200 && r.text === concurrent[0]?.text), 'concurrent first calls agree');

  const child = await app.signed('POST', '/internal/domains', JSON.stringify({ name: 'globex-eu', displayName: 'Globex EU', parentName: 'globex' }));
  t.equal(child.status, 200);
  t.equal((child.json as { parentId: string }).parentId, (first.json as { id: string }).id);
  t.equal((await app.signed('POST', '/internal/domains', JSON.stringify({ name: 'globex-eu', displayName: 'Globex EU', parentName: 'globex' }))).status, 200);
  t.equal((await app.signed('POST', '/internal/domains', JSON.stringify({ name: 'globex-eu', displayName: 'Globex EU' }))).status, 409, 'same name, no parent');
  t.equal((await app.signed('POST', '/internal/domains', JSON.stringify({ name: 'globex', displayName: 'Someone Else' }))).status, 409);
  t.equal((await app.signed('POST', '/internal/domains', JSON.stringify({ name: 'orphan', displayName: 'O', parentName: 'ghost' }))).status, 404);
  const orphan = await app.pool.query("SELECT count(*)::int AS n FROM domains WHERE name = 'orphan'");
  t.equal(orphan.rows[0].n, 0);
  for (const bad of [
    { name: 'Bad Name', displayName: 'x' },
    { displayName: 'x' },
    { name: 'ok', displayName: 'x', adminAccountId: 'bob' },
    { name: 'ok', displayName: 'x', parentName: '-x' },
    { name: 'ok', displayName: 'nul\u0000' },
  ]) {
    t.equal((await app.signed('POST', '/internal/domains', JSON.stringify(bad))).status, 400, JSON.stringify(bad));
  }
});
