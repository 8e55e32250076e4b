import t from 'tap';
import { startRegistry } from './support/harness.js';

// JSON may escape half of a surrogate pair ("\ud800"). Such a string has no UTF-8 form: stored, it
// would silently become U+FFFD, so two different names would be stored as one (the second signup a
// 409 for a name nobody has). It is refused by name, like NUL.
t.test('an unpaired surrogate in a Name or DisplayName is a 400 naming it, and nothing is written', async (t) => {
  const app = await startRegistry(t);
  for (const [body, message] of [
    ['{"Name":"\\ud800x","Tier":"pooled"}', /^Name: expected a non-empty string of at most 256 characters, without NUL \(\\u0000\), other control characters or lone surrogates/],
    ['{"Name":"\\udfffx","Tier":"pooled"}', /^Name: expected/],
    ['{"Name":"a","Tier":"pooled","DisplayName":"Acme \\udbff"}', /^DisplayName: expected/],
  ] as const) {
    const r = await app.signup(body);
    t.equal(r.status, 400, body);
    t.match(r.json, { type: 'Validation Error', message }, body);
  }
  t.equal(await app.rowCount(), 0, 'nothing written');

  const id = ((await app.signup({ Name: 'acme 😀', Tier: 'pooled' })).json as { ID: string; Name: string }).ID;
  // A status detail is a provisioner's output, not an identifier: half a character in it is replaced,
  // and the report is recorded (internal-routes.test.ts).
  const detail = await app.signed('POST', `/internal/organizations/${id}/status`, '{"status":"failed","detail":"disk \\ud800"}');
  t.equal(detail.status, 200);
  const row = await app.pool.query('SELECT name, status, status_detail FROM organizations WHERE id = $1', [id]);
  t.same(row.rows, [{ name: 'acme 😀', status: 'failed', status_detail: 'disk \ufffd' }], 'a surrogate pair is stored as sent; a lone one in a detail is replaced');
});
