import t from 'tap';
import { startRegistry } from './support/harness.js';

// The Issuer is compared, character for character, with the `iss` of a byo-idp organization's tokens.
// The WHATWG URL parser repairs what it reads (it drops surrounding spaces, adds missing slashes, turns
// backslashes into slashes, percent-encodes inner spaces), so "is it a URL?" accepted issuers that no
// token's `iss` can ever equal, and the organization's users could never sign in.
t.test('an Issuer the URL parser would have to repair is a 400 naming it, and nothing is written', async (t) => {
  const app = await startRegistry(t);
  const repaired = [
    ' https://idp.globex.test/',
    'https://idp.globex.test/ ',
    'https://idp.globex.test/realm one',
    'https:idp.globex.test',
    'https:/idp.globex.test',
    'https:///idp.globex.test',
    'https:\\\\idp.globex.test',
    'https://idp.globex.test\\realm',
  ];
  for (const issuer of repaired) {
    const r = await app.signup({ Name: 'globex', Tier: 'pooled', IdentityMode: 'byo-idp', Issuer: issuer });
    t.equal(r.status, 400, JSON.stringify(issuer));
    t.match(r.json, { type: 'Validation Error', message: /^Issuer: expected an http\(s\) URL/ }, JSON.stringify(issuer));
  }
  t.equal(await app.rowCount(), 0, 'nothing written');
});

t.test('an issuer written out in full is stored exactly as sent', async (t) => {
  const app = await startRegistry(t);
  const issuers = ['https://idp.globex.test', 'https://idp.globex.test/', 'http://127.0.0.1:8080/realms/globex', 'HTTPS://login.initech.test/tenant-1/v2.0'];
  for (const [n, issuer] of issuers.entries()) {
    const r = await app.signup({ Name: `org-${n}`, Tier: 'pooled', IdentityMode: 'byo-idp', Issuer: issuer });
    t.equal(r.status, 201, issuer);
    t.match(r.json, { Issuer: issuer, IdentityMode: 'byo-idp' }, issuer);
  }
});
