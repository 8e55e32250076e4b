import t from 'tap';
import { decodeClaims, encodeClaims, domainsOf, isSystemSubject, systemClaims } from '../../shared/claims.js';

const payload = { sub: '7c0e0000-0000-4000-8000-000000000001', accountName: 'ana@acme.test', memberships: [{ domainName: 'acme', role: 'business_admin' }] };
const json = JSON.stringify(payload);

t.test('accepts both base64 alphabets, with or without padding', async (t) => {
  const standard = Buffer.from(json).toString('base64');
  const urlSafe = Buffer.from(json).toString('base64url');
  for (const header of [standard, standard.replace(/=+$/, ''), urlSafe, urlSafe + '=='.slice(0, (4 - (urlSafe.length % 4)) % 4)]) {
    const r = decodeClaims(header);
    t.ok(r.ok, header);
    if (r.ok) t.same(r.claims, payload);
  }
});

t.test('a payload whose base64 differs between alphabets decodes in both', async (t) => {
  const tricky = { sub: 'u>>>???', memberships: [] };
  const std = Buffer.from(JSON.stringify(tricky)).toString('base64');
  t.match(std, /[+/]/, 'the standard encoding carries + or /');
  const r1 = decodeClaims(std);
  const r2 = decodeClaims(Buffer.from(JSON.stringify(tricky)).toString('base64url'));
  t.ok(r1.ok && r2.ok);
  if (r1.ok) t.equal(r1.claims.sub, 'u>>>???');
});

t.test('rejections carry a reason and never throw', async (t) => {
  t.same(decodeClaims(undefined), { ok: false, reason: 'missing' });
  t.same(decodeClaims(''), { ok: false, reason: 'missing' });
  t.same(decodeClaims('%%%not base64%%%'), { ok: false, reason: 'not base64' });
  t.same(decodeClaims('a'), { ok: false, reason: 'not base64' });
  t.same(decodeClaims(Buffer.from('{not json').toString('base64')), { ok: false, reason: 'not JSON' });
  const badUtf8 = Buffer.concat([Buffer.from('{"sub":"u'), Buffer.from([0xff]), Buffer.from('"}')]);
  t.same(decodeClaims(badUtf8.toString('base64')), { ok: false, reason: 'not UTF-8' }, 'invalid bytes are not read as U+FFFD');
  t.same(decodeClaims(Buffer.from('[1,2]').toString('base64')), { ok: false, reason: 'not a JSON object' });
  t.same(decodeClaims(Buffer.from('"str"').toString('base64')), { ok: false, reason: 'not a JSON object' });
  t.same(decodeClaims(Buffer.from(JSON.stringify({ sub: 42 })).toString('base64')), { ok: false, reason: 'sub missing or not a string' });
  t.same(decodeClaims(Buffer.from(JSON.stringify({ accountName: 'x' })).toString('base64')), { ok: false, reason: 'sub missing or not a string' });
  t.same(decodeClaims('x'.repeat(20000)), { ok: false, reason: 'not base64' });
});

t.test('past sub, nothing rejects the header: what cannot be read is left out, which only takes rights away', async (t) => {
  const read = (payload: unknown) => decodeClaims(Buffer.from(JSON.stringify(payload)).toString('base64'));
  t.same(read({ sub: 'u', memberships: 'acme' }), { ok: true, claims: { sub: 'u', memberships: [] } }, 'memberships not a list: none');
  t.same(read({ sub: 'u', memberships: null, accountName: null }), { ok: true, claims: { sub: 'u', memberships: [] } }, 'null memberships and accountName: none');
  t.same(read({ sub: 'u', accountName: 7 }), { ok: true, claims: { sub: 'u', memberships: [] } }, 'an accountName that is not a string is absent');
  t.same(
    read({ sub: 'u', accountName: 'ana', memberships: [{ domainName: 'acme', role: 'member' }, { domainName: 3, role: 'admin' }, { domainName: 'globex' }, 'x', { domainName: '', role: 'admin' }] }),
    { ok: true, claims: { sub: 'u', accountName: 'ana', memberships: [{ domainName: 'acme', role: 'member' }] } },
    'only the memberships that can be read count',
  );
  t.same(read({ sub: 'u', accountName: 7 }), { ok: true, claims: { sub: 'u', memberships: [] } });
  t.same(decodeClaims(Buffer.from(JSON.stringify({ sub: 'u', accountName: 7 })).toString('base64'), { requireAccountName: true }), { ok: false, reason: 'accountName missing' }, 'where an accountName is required, an unreadable one is missing');
  t.same(read({ sub: '' }), { ok: false, reason: 'sub missing or not a string' }, 'an empty sub is no subject');
});

t.test('a claim the stores cannot hold as sent (NUL, a lone surrogate) never becomes a subject, name or membership', async (t) => {
  // JSON escapes make these valid UTF-8 headers; stored, `x\ud800` and `x\udc00` would both be `x\ufffd`.
  const refused = 'text holds NUL or a lone surrogate';
  for (const claims of [{ sub: 'x\ud800' }, { sub: 'x\udc00' }, { sub: 'x\u0000' }]) {
    t.same(decodeClaims(encodeClaims(claims)), { ok: false, reason: refused }, JSON.stringify(claims));
  }
  for (const claims of [
    { sub: 'u', accountName: 'ana\ud800' },
    { sub: 'u', memberships: [{ domainName: 'ac\u0000me', role: 'member' }] },
    { sub: 'u', memberships: [{ domainName: 'acme', role: 'member\udfff' }] },
  ]) {
    t.same(decodeClaims(encodeClaims(claims)), { ok: true, claims: { sub: 'u', memberships: [] } }, `${JSON.stringify(claims)}: left out`);
  }
  const emoji = decodeClaims(encodeClaims({ sub: 'x\ud83d\ude00' }));
  t.ok(emoji.ok && emoji.claims.sub === 'x\u{1f600}', 'a whole pair is a character like any other');
});

t.test('notification-style callers may require an accountName', async (t) => {
  const header = encodeClaims({ sub: 'u1' });
  t.ok(decodeClaims(header).ok);
  t.same(decodeClaims(header, { requireAccountName: true }), { ok: false, reason: 'accountName missing' });
});

t.test('an array header uses its first value; memberships default to none', async (t) => {
  const r = decodeClaims([encodeClaims({ sub: 'u2' }), 'garbage']);
  t.ok(r.ok);
  if (r.ok) t.same(r.claims.memberships, []);
});

t.test('identity helpers', async (t) => {
  t.same(domainsOf({ sub: 'u', memberships: [{ domainName: 'a', role: 'viewer' }, { domainName: 'a', role: 'member' }, { domainName: 'b', role: 'member' }] }), ['a', 'b']);
  t.ok(isSystemSubject(systemClaims('notification-service')));
  t.notOk(isSystemSubject({ sub: 'systemic' }));
  t.equal(systemClaims('x').sub, 'system:x');
});
