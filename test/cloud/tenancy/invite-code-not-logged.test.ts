import t from 'tap';
import { request } from 'undici';
import { encodeClaims } from '../../../shared/claims.js';
import { createDomain, newAccount, startTenancy } from './support/harness.js';
import { capturedLogger } from '../../support/captured-logger.js';

t.test('a redemption that fails in the database logs the failure, never the code it carried', async (t) => {
  const { logger, text: lines } = capturedLogger('tenancy-test');
  const app = await startTenancy(t, { logger });
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const created = await app.call('POST', '/domains/acme/invite-codes', { as: { sub: owner, memberships: [{ domainName: 'acme', role: 'business_admin' }] }, body: { role: 'member' } });
  const code = (created.json as { code: string }).code;

  // A real failure of the real database: the table is gone while the service runs.
  await app.pool.query('ALTER TABLE invite_codes RENAME TO invite_codes_away');
  const failed = await app.call('POST', `/invite-codes/${code}/redeem`, { as: { sub: newAccount() } });
  t.equal(failed.status, 500);
  t.same(failed.json, { type: 'Internal Server Error', message: 'internal error' });
  const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((l) => l.msg === 'unhandled error');
  t.equal(logged.length, 1, 'the failure is logged');
  t.match(logged[0], { method: 'POST', path: '/invite-codes/:code/redeem', error: /\(42P01\)/ });
  t.notOk(lines.join('\n').includes(code), 'the code, a bearer secret, is in no log line');

  await app.pool.query('ALTER TABLE invite_codes_away RENAME TO invite_codes');
  t.equal((await app.call('POST', `/invite-codes/${code}/redeem`, { as: { sub: newAccount() } })).status, 201, 'the code was not used up');
});

t.test('a body its Content-Encoding cannot decode, sent to a redemption URL: 400, and the code is logged nowhere', async (t) => {
  const { logger, text: lines } = capturedLogger('tenancy-test');
  const app = await startTenancy(t, { logger });
  const code = '0123456789abcdef0123456789abcdef';
  for (const encoding of ['br', 'gzip']) {
    const res = await request(`${app.url}/invite-codes/${code}/redeem`, { method: 'POST', body: 'not compressed', headers: { 'content-type': 'application/json', 'content-encoding': encoding, 'x-gateway-claims': encodeClaims({ sub: newAccount(), memberships: [] }) } });
    t.equal(res.statusCode, 400, encoding);
    t.same(await res.body.json(), { type: 'Validation Error', message: 'request body is not valid for its Content-Encoding' });
  }
  t.notOk(lines.join('\n').includes(code), 'the code is in no log line');
});
