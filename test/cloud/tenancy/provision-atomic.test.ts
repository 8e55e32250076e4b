import t from 'tap';
import pg from 'pg';
import { untilSessionsWaitForLocks } from '../../support/stack.js';
import { createDomain, migratedPool, newAccount, startTenancy } from './support/harness.js';

const provisionBody = (accountId: string, role = 'business_admin') => JSON.stringify({ accountId, domainName: 'acme', role });

/**
 * The pool the store uses, except that right after a statement that inserts into memberships and
 * adds no row (the membership exists), `between` runs on another real connection. It is where a
 * concurrent delete would land if adding a member took more than one statement.
 */
function poolWithDeleteBetween(pool: pg.Pool, between: () => Promise<void>): pg.Pool {
  return new Proxy(pool, {
    get(target, prop) {
      if (prop === 'query') {
        return async (...args: Parameters<pg.Pool['query']>) => {
          const result = (await (target.query as (...a: unknown[]) => Promise<pg.QueryResult>)(...args)) as pg.QueryResult;
          const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text ?? '';
          if (/INSERT INTO memberships/.test(text) && result.rowCount === 0) await between();
          return result;
        };
      }
      const value: unknown = Reflect.get(target, prop);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

t.test('a membership deleted while provisioning never turns into "domain not found"', async (t) => {
  const { pool, databaseUrl } = await migratedPool(t);
  const deleter = new pg.Client({ connectionString: databaseUrl });
  await deleter.connect();
  t.teardown(() => deleter.end());
  let owner = '';
  let deletes = 0;
  const app = await startTenancy(t, {
    pool: poolWithDeleteBetween(pool, async () => {
      deletes++;
      await deleter.query('DELETE FROM memberships WHERE account_id = $1', [owner]);
    }),
    databaseUrl,
  });
  owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });

  const provisioned = await app.signed('POST', '/internal/provision', provisionBody(owner));
  t.not(provisioned.status, 404, `the domain exists (answered ${provisioned.text})`);
  t.equal(provisioned.status, 200);
  t.match(provisioned.json, { accountId: owner, domainName: 'acme', role: 'business_admin' });
  t.equal(deletes, 0, 'adding a member is one statement: there is no point between "it exists" and reading it');
});


t.test('provisioning racing a real delete of the membership: either outcome, never a 404', async (t) => {
  const app = await startTenancy(t);
  for (const [ending, expected] of [
    ['COMMIT', 'recreated with the requested role'],
    ['ROLLBACK', 'kept as it was'],
  ] as const) {
    const owner = newAccount();
    const domain = `acme-${ending.toLowerCase()}`;
    await createDomain(app, owner, { name: domain });
    const deleter = await app.pool.connect();
    try {
      await deleter.query('BEGIN');
      await deleter.query('DELETE FROM memberships WHERE account_id = $1', [owner]);
      const provisioning = app.signed('POST', '/internal/provision', JSON.stringify({ accountId: owner, domainName: domain, role: 'business_admin' }));
      await untilSessionsWaitForLocks(app.pool);
      await deleter.query(ending);
      const provisioned = await provisioning;
      t.equal(provisioned.status, 200, `${ending}: ${provisioned.text}`);
      t.match(provisioned.json, { accountId: owner, domainName: domain, role: 'business_admin', joinedVia: 'local' }, expected);
    } finally {
      deleter.release();
    }
    const rows = await app.pool.query('SELECT count(*)::int AS n FROM memberships WHERE account_id = $1', [owner]);
    t.equal(rows.rows[0].n, 1, `${ending}: one membership`);
  }
});
