import { createHmac, randomUUID } from 'node:crypto';
import t from 'tap';
import { request } from 'undici';
import { startRegistry } from './support/harness.js';

t.test('pending lists every organization still provisioning, oldest first', async (t) => {
  const app = await startRegistry(t);
  const ids: string[] = [];
  for (const name of ['first', 'second', 'third', 'fourth']) ids.push(((await app.signup({ Name: name, Tier: 'pooled' })).json as { ID: string }).ID);
  await app.signed('POST', `/internal/organizations/${ids[1]}/status`, JSON.stringify({ status: 'ready' }));
  await app.signed('POST', `/internal/organizations/${ids[3]}/suspend`);
  const pending = await app.signed('GET', '/internal/organizations/pending');
  t.equal(pending.status, 200);
  t.same((pending.json as { Name: string }[]).map((o) => o.Name), ['first', 'third']);
  t.match((pending.json as Record<string, unknown>[])[0], { Status: 'provisioning', LicenseStatus: 'active', Tier: 'pooled' });
});

t.test('HMAC: empty-body GET, trailing whitespace, uppercase hex, missing header, key rotation', async (t) => {
  const app = await startRegistry(t, { keys: ['current', 'previous'] });
  const id = ((await app.signup({ Name: 'acme', Tier: 'pooled' })).json as { ID: string }).ID;
  t.equal((await app.signed('GET', '/internal/organizations/pending')).status, 200, 'GET signed over empty bytes');
  t.equal((await app.signed('GET', '/internal/organizations/pending', undefined, 'previous')).status, 200, 'the previous secret still works');
  const refusals = [
    await app.signed('GET', '/internal/organizations/pending', undefined, 'stranger'),
    await app.signed('POST', `/internal/organizations/${id}/suspend`, undefined, 'stranger'),
    await app.signed('POST', `/internal/organizations/${id}/status`, JSON.stringify({ status: 'ready' }), 'stranger'),
  ];
  for (const refused of refusals) {
    t.equal(refused.status, 403);
    t.equal(refused.text, 'invalid signature');
    t.match(refused.headers['content-type'], /^text\/plain/);
  }
  const upper = await request(`${app.url}/internal/organizations/pending`, { headers: { 'x-signature': createHmac('sha256', 'current').update('').digest('hex').toUpperCase() } });
  t.equal(upper.statusCode, 403, 'uppercase hex is a mismatch');
  t.equal(await upper.body.text(), 'invalid signature');
  const missing = await request(`${app.url}/internal/organizations/pending`);
  t.equal(missing.statusCode, 403);
  await missing.body.dump();

  const body = JSON.stringify({ status: 'failed', detail: 'x' });
  const padded = `${body}\n\t `;
  const unsignedPadding = await request(`${app.url}/internal/organizations/${id}/status`, {
    method: 'POST',
    headers: { 'x-signature': createHmac('sha256', 'current').update(body).digest('hex'), 'content-type': 'application/json' },
    body: padded,
  });
  t.equal(unsignedPadding.statusCode, 403, 'whitespace the signature does not cover: refused');
  t.equal(await unsignedPadding.body.text(), 'invalid signature');
  t.equal((await app.pool.query('SELECT status FROM organizations WHERE id = $1', [id])).rows[0].status, 'provisioning', 'nothing written');
  const signedPadding = await app.signed('POST', `/internal/organizations/${id}/status`, padded);
  t.equal(signedPadding.status, 200, 'whitespace that is signed: accepted');
  t.match(signedPadding.json, { Status: 'failed', StatusDetail: 'x' });
});

t.test('a failure reported with a detail longer than is kept is recorded, its detail cut', async (t) => {
  const app = await startRegistry(t);
  const id = ((await app.signup({ Name: 'acme', Tier: 'pooled' })).json as { ID: string }).ID;
  // A provisioner's whole error output, with a character outside the BMP where the cut falls.
  const detail = `${'e'.repeat(4094)}\u{1f4a5}${'rror '.repeat(2000)}`;
  const reported = await app.signed('POST', `/internal/organizations/${id}/status`, JSON.stringify({ status: 'failed', detail }));
  t.equal(reported.status, 200, 'the failure is recorded');
  const kept = (reported.json as { StatusDetail: string }).StatusDetail;
  t.equal(Array.from(kept).length, 4096, 'its detail is cut to 4,096 characters');
  t.equal(kept, `${'e'.repeat(4094)}\u{1f4a5}…`, 'whole characters, and a mark that it was cut');
  const row = (await app.pool.query('SELECT status, status_detail FROM organizations WHERE id = $1', [id])).rows[0];
  t.same(row, { status: 'failed', status_detail: kept }, 'stored as answered');
  const pending = await app.signed('GET', '/internal/organizations/pending');
  t.same(pending.json, [], 'and the organization is no longer pending');
});

t.test('a failure whose detail holds a NUL or half a character is recorded, those replaced', async (t) => {
  const app = await startRegistry(t);
  const id = ((await app.signup({ Name: 'acme', Tier: 'pooled' })).json as { ID: string }).ID;
  // Error output cut by the provisioner in the middle of a character, and a NUL from a binary tool.
  const reported = await app.signed('POST', `/internal/organizations/${id}/status`, JSON.stringify({ status: 'failed', detail: 'disk\u0000full: \ud83d' }));
  t.equal(reported.status, 200, 'the failure is recorded');
  t.match(reported.json, { Status: 'failed', StatusDetail: 'disk\ufffdfull: \ufffd' });
  t.same((await app.pool.query('SELECT status, status_detail FROM organizations WHERE id = $1', [id])).rows[0], { status: 'failed', status_detail: 'disk\ufffdfull: \ufffd' });
});

t.test('unknown or malformed ids are 404, after the signature and the body are checked', async (t) => {
  const app = await startRegistry(t);
  for (const id of [randomUUID(), 'not-a-uuid']) {
    const status = await app.signed('POST', `/internal/organizations/${id}/status`, JSON.stringify({ status: 'ready' }));
    t.equal(status.status, 404, `status ${id}`);
    t.match(status.json, { type: 'Not Found', message: /not found/ });
    t.equal((await app.signed('POST', `/internal/organizations/${id}/suspend`)).status, 404, `suspend ${id}`);
  }
  t.equal((await app.signed('POST', `/internal/organizations/${randomUUID()}/status`, JSON.stringify({ status: 'done' }))).status, 400, 'a bad body is 400 first');
  t.equal((await app.signed('POST', `/internal/organizations/${randomUUID()}/suspend`, '{bad json')).status, 400, 'malformed JSON is 400');
  t.equal((await app.signed('GET', '/internal/organizations/whatever')).status, 404, 'no read-one route');
});
