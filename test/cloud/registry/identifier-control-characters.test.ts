import t from 'tap';
import { startRegistry } from './support/harness.js';

// Name and Issuer are identifiers: Name is unique and looked up, Issuer is compared with a token's
// `iss`. Like every id in Lintel they refuse all control characters (C0, DEL, C1, U+2028/2029), not only
// NUL. DisplayName and the status detail are free text: only what cannot be stored is refused there.
const CONTROLS = ['\u0001', '\t', '\n', '\u001f', '\u007f', '\u0085', '\u009f', '\u2028', '\u2029'];
/** `U+2028`: a raw separator in an assertion's name would break the TAP stream itself. */
const codePoint = (c: string) => `U+${(c.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`;

t.test('a control character in Name or Issuer is a 400 naming the field, and nothing is written', async (t) => {
  const app = await startRegistry(t);
  for (const control of CONTROLS) {
    const label = codePoint(control);
    const name = await app.signup({ Name: `acme${control}corp`, Tier: 'pooled' });
    t.equal(name.status, 400, `Name holding ${label}`);
    t.match(name.json, { type: 'Validation Error', message: /^Name: expected a non-empty string of at most 256 characters, without NUL \(\\u0000\), other control characters/ }, label);
    const issuer = await app.signup({ Name: 'globex', Tier: 'pooled', IdentityMode: 'byo-idp', Issuer: `https://idp.globex.test/${control}` });
    t.equal(issuer.status, 400, `Issuer holding ${label}`);
    t.match(issuer.json, { type: 'Validation Error', message: /^Issuer: expected a string of at most 256 characters without control characters/ }, label);
  }
  t.equal(await app.rowCount(), 0, 'nothing written');
});

t.test('free text keeps its control characters: DisplayName and the status detail', async (t) => {
  const app = await startRegistry(t);
  const created = await app.signup({ Name: 'acme', DisplayName: 'Acme\tCorp\nLtd', Tier: 'pooled' });
  t.equal(created.status, 201);
  t.match(created.json, { Name: 'acme', DisplayName: 'Acme\tCorp\nLtd' });
  const id = (created.json as { ID: string }).ID;
  const failed = await app.signed('POST', `/internal/organizations/${id}/status`, JSON.stringify({ status: 'failed', detail: 'step 1\nstep 2\u0001' }));
  t.equal(failed.status, 200);
  t.match(failed.json, { Status: 'failed', StatusDetail: 'step 1\nstep 2\u0001' });
});
