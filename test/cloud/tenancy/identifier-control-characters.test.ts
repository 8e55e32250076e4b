import t from 'tap';
import { createDomain, newAccount, startTenancy } from './support/harness.js';

// Tenancy's identifiers: domain names ([a-z0-9-]), account ids (uuid), roles and joinedVia (closed
// sets) were already strict; externalId, the identity provider's id of the account, is the one
// free-form id. Like every id in Lintel it refuses all control characters. displayName is free text.
const CONTROLS = ['\u0001', '\t', '\n', '\u001f', '\u007f', '\u0085', '\u009f', '\u2028', '\u2029'];
/** `U+2028`: a raw separator in an assertion's name would break the TAP stream itself. */
const codePoint = (c: string) => `U+${(c.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`;

t.test('an externalId holding a control character is a 400 naming it, and nothing is written', async (t) => {
  const app = await startTenancy(t);
  await createDomain(app, newAccount(), { name: 'acme' });
  const bo = newAccount();
  for (const control of CONTROLS) {
    const r = await app.signed('POST', '/internal/provision', JSON.stringify({ accountId: bo, domainName: 'acme', role: 'member', externalId: `idp|${control}42` }));
    t.equal(r.status, 400, codePoint(control));
    t.match(r.json, { type: 'Validation Error', message: /^externalId: expected a non-empty string of at most 256 characters, without NUL \(\\u0000\), other control characters/ });
  }
  const rows = await app.pool.query('SELECT count(*)::int AS n FROM memberships WHERE account_id = $1', [bo]);
  t.equal(rows.rows[0].n, 0, 'nothing written');
  const fine = await app.signed('POST', '/internal/provision', JSON.stringify({ accountId: bo, domainName: 'acme', role: 'member', externalId: 'idp|42 ü' }));
  t.equal(fine.status, 200);
  t.match(fine.json, { externalId: 'idp|42 ü' });
});

t.test('a displayName is free text and keeps a tab', async (t) => {
  const app = await startTenancy(t);
  const created = await app.call('POST', '/domains', { as: { sub: newAccount() }, body: { name: 'acme', displayName: 'Acme\tCorp' } });
  t.equal(created.status, 201);
  t.match(created.json, { displayName: 'Acme\tCorp' });
});
