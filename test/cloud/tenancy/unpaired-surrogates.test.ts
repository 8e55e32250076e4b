import t from 'tap';
import { createDomain, newAccount, startTenancy } from './support/harness.js';

// JSON may escape half of a surrogate pair ("\ud800"). Such a string has no UTF-8 form: stored, it
// would silently become U+FFFD, so different inputs would be stored as one and nobody gets back what
// they sent. It is refused by name, like NUL.
t.test('text with an unpaired surrogate is a 400 naming the field, and nothing is stored', async (t) => {
  const app = await startTenancy(t);
  const ana = newAccount();
  const created = await app.call('POST', '/domains', { as: { sub: ana }, body: '{"name":"lone","displayName":"Acme \\ud800"}' });
  t.equal(created.status, 400);
  t.match(created.json, { type: 'Validation Error', message: /^displayName: expected a non-empty string of at most 256 characters, without NUL \(\\u0000\) or unpaired surrogates/ });
  t.equal(await app.store.findDomain('lone'), undefined, 'no domain stored');

  await createDomain(app, ana, { name: 'acme' });
  const bo = newAccount();
  const provisioned = await app.signed('POST', '/internal/provision', `{"accountId":"${bo}","domainName":"acme","role":"member","externalId":"idp|\\udc00"}`);
  t.equal(provisioned.status, 400);
  t.match(provisioned.json, { message: /^externalId: expected/ });
  t.same((await app.signed('GET', `/internal/memberships?accountId=${bo}`)).json, [], 'no membership stored');

  const paired = await app.call('POST', '/domains', { as: { sub: ana }, body: '{"name":"emoji","displayName":"Acme \\ud83d\\ude00"}' });
  t.equal(paired.status, 201, 'a surrogate pair (one emoji) is fine');
  t.equal((paired.json as { displayName: string }).displayName, 'Acme 😀', 'and stored as sent');
});
