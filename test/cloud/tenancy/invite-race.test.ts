import t from 'tap';
import { createDomain, newAccount, startTenancy } from './support/harness.js';

const RACERS = 64;
const ROUNDS = 5;

t.test(`${RACERS} concurrent redeemers of one code: exactly one wins, ${ROUNDS} times over`, async (t) => {
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  for (let round = 0; round < ROUNDS; round++) {
    const created = await app.call('POST', '/domains/acme/invite-codes', {
      as: { sub: owner, memberships: [{ domainName: 'acme', role: 'business_admin' }] },
      body: { role: 'member' },
    });
    const code = (created.json as { code: string }).code;
    const racers = Array.from({ length: RACERS }, newAccount);
    const answers = await Promise.all(racers.map((sub) => app.call('POST', `/invite-codes/${code}/redeem`, { as: { sub } })));
    const winners = answers.flatMap((a, i) => (a.status === 201 ? [racers[i]] : []));
    const losers = answers.filter((a) => a.status !== 201);
    t.equal(winners.length, 1, `round ${round}: exactly one winner`);
    t.equal(losers.length, RACERS - 1);
    t.ok(losers.every((a) => a.status === 404 && a.text === losers[0]?.text), `round ${round}: every loser gets the identical 404`);
    t.same(losers[0]?.json, { type: 'Not Found', message: 'invalid invite code' });
    const marked = await app.pool.query('SELECT redeemed_by FROM invite_codes WHERE code = $1', [code]);
    t.same(marked.rows, [{ redeemed_by: winners[0] }], `round ${round}: the code names the winner`);
    const joined = await app.pool.query('SELECT account_id FROM memberships WHERE account_id = ANY($1::uuid[])', [racers]);
    t.same(joined.rows, [{ account_id: winners[0] }], `round ${round}: only the winner became a member`);
  }
});
