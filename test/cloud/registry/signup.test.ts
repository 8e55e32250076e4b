import t from 'tap';
import { startRegistry } from './support/harness.js';

const FIELDS = ['ID', 'Name', 'DisplayName', 'Tier', 'Host', 'IdentityMode', 'Issuer', 'LicenseStatus', 'Status', 'StatusDetail', 'created_at'];

t.test('signup writes one row and returns it with exactly the seed\'s field names', async (t) => {
  const app = await startRegistry(t);
  const created = await app.signup({ Name: 'acme', DisplayName: 'Acme Corp', Tier: 'pooled' });
  t.equal(created.status, 201);
  const org = created.json as Record<string, unknown>;
  t.same(Object.keys(org).sort(), [...FIELDS].sort(), 'every field, nothing else');
  t.match(org, {
    ID: /^[0-9a-f-]{36}$/,
    Name: 'acme',
    DisplayName: 'Acme Corp',
    Tier: 'pooled',
    Host: '',
    IdentityMode: 'platform',
    Issuer: '',
    LicenseStatus: 'active',
    Status: 'provisioning',
    StatusDetail: null,
  });
  t.ok(!Number.isNaN(Date.parse(String(org.created_at))));
  t.equal(await app.rowCount(), 1);
});

t.test('input keys match case-insensitively', async (t) => {
  const app = await startRegistry(t);
  const created = await app.signup({ name: 'globex', DISPLAYNAME: 'Globex', tier: 'on-prem', identitymode: 'byo-idp', ISSUER: 'https://idp.globex.test/' });
  t.equal(created.status, 201);
  t.match(created.json, { Name: 'globex', DisplayName: 'Globex', Tier: 'on-prem', IdentityMode: 'byo-idp', Issuer: 'https://idp.globex.test/' });
  const twice = await app.signup({ name: 'x', Name: 'y', Tier: 'pooled' });
  t.equal(twice.status, 400);
  t.match(twice.json, { type: 'Validation Error', message: /Name: given twice \(as name and Name\)/ });
});

t.test('an invalid tier, a missing Name, unknown fields and bad issuers are 400 and write nothing', async (t) => {
  const app = await startRegistry(t);
  const cases: [unknown, RegExp][] = [
    [{ Name: 'a', Tier: 'gold' }, /Tier: expected one of "pooled", "dedicated", "on-prem", got "gold"/],
    [{ Name: 'a', Tier: 'Pooled' }, /Tier: expected one of/],
    [{ Name: 'a' }, /Tier: expected one of .*got nothing/],
    [{ Tier: 'pooled' }, /Name: expected a non-empty string/],
    [{ Name: '   ', Tier: 'pooled' }, /Name: expected a non-empty string/],
    [{ Name: 'a', Tier: 'pooled', IdentityMode: 'saml' }, /IdentityMode: expected one of "platform", "byo-idp"/],
    [{ Name: 'a', Tier: 'pooled', IdentityMode: 'byo-idp' }, /Issuer: required when IdentityMode is "byo-idp"/],
    [{ Name: 'a', Tier: 'pooled', Issuer: 'not a url' }, /Issuer: expected an http\(s\) URL/],
    [{ Name: 'a', Tier: 'pooled', Status: 'ready' }, /Status: not a field of this request/],
    [{ Name: 'a', Tier: 'pooled', DisplayName: 42 }, /DisplayName: expected a string/],
    // PostgreSQL text cannot hold NUL: each stored field refuses it by name instead of failing as a 500.
    [{ Name: 'a\u0000b', Tier: 'pooled' }, /^Name: expected a non-empty string of at most 256 characters, without NUL/],
    [{ Name: 'a', Tier: 'pooled', DisplayName: 'Acme\u0000' }, /^DisplayName: expected a string of at most 256 characters, without NUL/],
    [{ Name: 'a', Tier: 'pooled', Issuer: 'https://idp.test/\u0000' }, /^Issuer: expected a string of at most 256 characters without control characters \(C0, DEL, C1, U\+2028, U\+2029\), without NUL/],
    [[], /request body: expected a JSON object/],
    ['"acme"', /not valid JSON/],
    ['{"Name": "a", ', /not valid JSON/],
  ];
  for (const [body, message] of cases) {
    const r = await app.signup(body);
    t.equal(r.status, 400, JSON.stringify(body));
    t.match(r.json, { type: 'Validation Error', message }, JSON.stringify(body));
  }
  // Thousands of unknown keys, one of them very long: a short answer, never an echo of the request.
  const flood: Record<string, unknown> = { Name: 'a', Tier: 'pooled', ['k'.repeat(5000)]: 1 };
  for (let i = 0; i < 20_000; i++) flood[`x${i}`] = i;
  const flooded = await app.signup(flood);
  t.equal(flooded.status, 400);
  const { errors, message } = flooded.json as { errors: string[]; message: string };
  t.equal(errors.length, 21, 'twenty problems and a count of the rest');
  t.equal(errors[20], 'and 19981 more');
  t.ok(message.length < 6000, `the message stays short (${message.length} characters)`);
  t.notOk(message.includes('k'.repeat(100)), 'a long key is cut, not echoed');
  const tooBig = await app.signup(JSON.stringify({ Name: 'big', Tier: 'pooled', DisplayName: 'x'.repeat(1_100_000) }));
  t.equal(tooBig.status, 413, 'a body over 1 MiB');
  t.match(tooBig.json, { type: 'Payload Too Large' });
  t.equal(await app.rowCount(), 0, 'nothing written');
});

t.test('a duplicate Name is 409, whatever its case', async (t) => {
  const app = await startRegistry(t);
  t.equal((await app.signup({ Name: 'Initech', Tier: 'dedicated' })).status, 201);
  for (const name of ['Initech', 'initech', 'INITECH']) {
    const again = await app.signup({ Name: name, Tier: 'pooled' });
    t.equal(again.status, 409, name);
    t.match(again.json, { type: 'Conflict', message: /already exists/ });
  }
  const racing = await Promise.all(Array.from({ length: 12 }, () => app.signup({ Name: 'hooli', Tier: 'pooled' })));
  t.same(racing.map((r) => r.status).sort(), [201, ...Array(11).fill(409)], 'concurrent signups: one wins');
  t.equal(await app.rowCount(), 2);
});

t.test('names a reader cannot tell apart are one Name: the second is 409', async (t) => {
  const app = await startRegistry(t);
  const pairs: Array<[string, string, string]> = [
    ['Café', 'Cafe\u0301', 'a combining accent'],
    ['acme', '\uff41\uff43\uff4d\uff45', 'fullwidth letters'],
    ['Acme Corp', 'Acme\u00a0Corp', 'a no-break space'],
    ['Umbrella  Inc', 'Umbrella Inc', 'a run of spaces'],
  ];
  for (const [first, second, what] of pairs) {
    const created = await app.signup({ Name: first, Tier: 'pooled' });
    t.equal(created.status, 201, `${what}: the first`);
    const again = await app.signup({ Name: second, Tier: 'pooled' });
    t.equal(again.status, 409, `${what}: the second is the same name`);
  }
  t.match((await app.signup({ Name: 'Cafe\u0301 Noir', Tier: 'pooled' })).json, { Name: 'Café Noir' }, 'stored in its composed form');
  t.equal(await app.rowCount(), 5);
});

t.test('a Name with invisible characters, only white space, or too long once canonical is 400 and stores nothing', async (t) => {
  const app = await startRegistry(t);
  const refusedNames: Array<[string, string]> = [
    ['ac\u200bme', 'a zero-width space'],
    ['ac\ufeffme', 'a byte order mark (white space to JavaScript)'],
    ['acme\u202eevil', 'a bidi override'],
    ['ac\u061cme', 'an Arabic letter mark'],
    ['ac\u{e0020}me', 'a tag character'],
    ['ac\u200dme', 'a zero-width joiner between Latin letters'],
    ['\u00a0\u2003', 'only white space'],
    ['\ufdfa'.repeat(256), 'a name NFKC expands past 256 characters'],
  ];
  for (const [name, what] of refusedNames) {
    const refused = await app.signup({ Name: name, Tier: 'pooled' });
    t.equal(refused.status, 400, what);
    t.match(refused.json, { type: 'Validation Error', message: /^Name: / }, what);
  }
  t.equal(await app.rowCount(), 0);
  const allowed: Array<[string, string]> = [
    ['\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645', 'a Persian name with a zero-width non-joiner'],
    ['\u{1f469}\u200d\u{1f4bb} Labs', 'an emoji joined by a zero-width joiner'],
  ];
  for (const [name, what] of allowed) {
    t.equal((await app.signup({ Name: name, Tier: 'pooled' })).status, 201, what);
  }
});

t.test('signup needs no identity, and unknown routes are 404', async (t) => {
  const app = await startRegistry(t);
  t.equal((await app.signup({ Name: 'open', Tier: 'pooled' })).status, 201, 'no claims, no signature');
  t.equal((await app.signed('GET', '/organizations')).status, 404, 'no route reads organizations openly');
  t.equal((await app.signed('GET', '/health')).status, 200);
});
