import t from 'tap';
import { createDomain, newAccount, startTenancy, type TenancyUnderTest } from './support/harness.js';

const admin = (sub: string, domain: string) => ({ sub, memberships: [{ domainName: domain, role: 'business_admin' }] });

async function administratorsOf(app: TenancyUnderTest, domain: string): Promise<number> {
  const result = await app.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM memberships m JOIN domains d ON d.id = m.domain_id WHERE d.name = $1 AND m.role IN ('business_admin', 'admin')",
    [domain],
  );
  return result.rows[0]?.n ?? -1;
}

async function domainWithAdmins(app: TenancyUnderTest, name: string, count: number): Promise<string[]> {
  const admins = Array.from({ length: count }, newAccount);
  const [first, ...rest] = admins;
  await createDomain(app, first ?? '', { name });
  for (const other of rest) {
    const invited = await app.call('POST', `/domains/${name}/invite`, { as: admin(first ?? '', name), body: { accountId: other, role: 'business_admin' } });
    if (invited.status !== 201) throw new Error(`invite failed: ${invited.status}`);
  }
  return admins;
}

t.test('two administrators removing each other at once always leave one', async (t) => {
  const app = await startTenancy(t);
  for (let round = 0; round < 10; round++) {
    const name = `pair-${round}`;
    const [a = '', b = ''] = await domainWithAdmins(app, name, 2);
    const answers = await Promise.all([
      app.call('DELETE', `/domains/${name}/members/${b}`, { as: admin(a, name) }),
      app.call('DELETE', `/domains/${name}/members/${a}`, { as: admin(b, name) }),
    ]);
    // The loser is no administrator by then: her memberships as stored refuse her (403).
    t.same(answers.map((r) => r.status).sort(), [204, 403], `round ${round}: one removal wins, the other is refused`);
    t.equal(await administratorsOf(app, name), 1, `round ${round}: one administrator left`);
  }
});

t.test('two administrators leaving at once always leave one', async (t) => {
  const app = await startTenancy(t);
  for (let round = 0; round < 10; round++) {
    const name = `leave-${round}`;
    const [a = '', b = ''] = await domainWithAdmins(app, name, 2);
    const answers = await Promise.all([
      app.call('DELETE', `/domains/${name}/members/${a}`, { as: { sub: a } }),
      app.call('DELETE', `/domains/${name}/members/${b}`, { as: { sub: b } }),
    ]);
    t.same(answers.map((r) => r.status).sort(), [204, 409], `round ${round}`);
    t.equal(await administratorsOf(app, name), 1, `round ${round}: one administrator left`);
  }
});

t.test('four administrators each removing all the others at once leave exactly one', async (t) => {
  const app = await startTenancy(t);
  for (let round = 0; round < 5; round++) {
    const name = `crowd-${round}`;
    const admins = await domainWithAdmins(app, name, 4);
    const removals = admins.flatMap((remover) =>
      admins.filter((target) => target !== remover).map((target) => app.call('DELETE', `/domains/${name}/members/${target}`, { as: admin(remover, name) })),
    );
    const statuses = (await Promise.all(removals)).map((r) => r.status);
    t.equal(statuses.filter((s) => s === 204).length, 3, `round ${round}: three removals succeed`);
    // A removal needs its remover stored as an administrator and removes another, so the last removal
    // leaves its remover: what a removed administrator asks after her removal is refused (403).
    t.ok(statuses.every((s) => s === 204 || s === 403 || s === 404), `round ${round}: the rest are refused or find the member gone`);
    t.ok(statuses.includes(403), `round ${round}: the removed administrators' removals were refused`);
    t.equal(await administratorsOf(app, name), 1, `round ${round}: one administrator left`);
  }
});
