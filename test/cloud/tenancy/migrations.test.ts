import { cp, mkdtemp, rm, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import t from 'tap';
import { MigrationError, runMigrations } from '../../../shared/pg-migrations.js';
import { freshPgDatabase } from '../../support/stack.js';
import { migratedPool, newAccount, TENANCY_MIGRATIONS } from './support/harness.js';

const REGISTRY_MIGRATIONS = fileURLToPath(new URL('../../../cloud/registry/migrations/', import.meta.url));

async function emptyPool(t: { teardown(fn: () => unknown): void }): Promise<pg.Pool> {
  const pool = new pg.Pool({ connectionString: await freshPgDatabase(t), max: 12 });
  pool.on('error', () => undefined);
  t.teardown(() => pool.end());
  return pool;
}

t.test('migrations apply in order, once, even when several replicas start at the same time', async (t) => {
  const pool = await emptyPool(t);
  const results = await Promise.all(Array.from({ length: 4 }, () => runMigrations(pool, 'tenancy', TENANCY_MIGRATIONS)));
  t.same(results.flatMap((r) => r.applied).sort(), ['0001_init', '0002_subdomains', '0003_invite_codes', '0004_public_domains', '0005_provisioned_domains', '0006_deleted_accounts', '0007_provisioned_admin', '0008_invite_codes_by_creator'], 'each applied by exactly one starter');
  t.same((await runMigrations(pool, 'tenancy', TENANCY_MIGRATIONS)).applied, [], 'a restart applies nothing');
  const rows = await pool.query("SELECT version FROM schema_migrations WHERE service = 'tenancy' ORDER BY version");
  t.same(rows.rows.map((r) => r.version), ['0001_init', '0002_subdomains', '0003_invite_codes', '0004_public_domains', '0005_provisioned_domains', '0006_deleted_accounts', '0007_provisioned_admin', '0008_invite_codes_by_creator']);
});

t.test('tenancy and registry can share one database', async (t) => {
  const pool = await emptyPool(t);
  const [tenancy, registry] = await Promise.all([runMigrations(pool, 'tenancy', TENANCY_MIGRATIONS), runMigrations(pool, 'registry', REGISTRY_MIGRATIONS)]);
  t.equal(tenancy.applied.length, 8);
  t.same(registry.applied, ['0001_init']);
});

t.test('a domain provisioned before 0007 keeps the administrator provisioning made as the one its retries must name', async (t) => {
  const pool = await emptyPool(t);
  const dir = await mkdtemp(join(tmpdir(), 'tenancy-migrations-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await cp(TENANCY_MIGRATIONS, dir, { recursive: true });
  await rm(join(dir, '0007_provisioned_admin.sql'));
  await rm(join(dir, '0008_invite_codes_by_creator.sql'));
  await runMigrations(pool, 'tenancy', dir);
  // As the previous revision left them: a provisioned domain whose administrator (joined_via 'local', as
  // provisioning adds it) was joined by an invited one later and by an IdP one, older still; a
  // provisioned domain with no administrator that invited and IdP administrators joined since; and an
  // end user's domain.
  const [first, second, idp, invited, viaIdp, user] = [newAccount(), newAccount(), newAccount(), newAccount(), newAccount(), newAccount()];
  const domain = async (name: string, provisioned: boolean) =>
    (await pool.query<{ id: string }>('INSERT INTO domains (name, display_name, provisioned) VALUES ($1, $1, $2) RETURNING id', [name, provisioned])).rows[0]!.id;
  const admin = (account: string, domainId: string, joinedVia: string, age: string) =>
    pool.query("INSERT INTO memberships (account_id, domain_id, role, joined_via, created_at) VALUES ($1, $2, 'business_admin', $3, now() - $4::interval)", [account, domainId, joinedVia, age]);
  const org = await domain('initech', true);
  const bare = await domain('hooli', true);
  const own = await domain('mine', false);
  await admin(idp, org, 'self-idp', '2 days');
  await admin(first, org, 'local', '1 day');
  await admin(second, org, 'invite', '0 days');
  await admin(invited, bare, 'invite', '1 day');
  await admin(viaIdp, bare, 'self-idp', '2 days');
  await admin(user, own, 'local', '0 days');

  t.same((await runMigrations(pool, 'tenancy', TENANCY_MIGRATIONS)).applied, ['0007_provisioned_admin', '0008_invite_codes_by_creator']);
  const rows = await pool.query('SELECT name, provisioned_admin FROM domains ORDER BY name');
  t.same(rows.rows, [
    { name: 'hooli', provisioned_admin: null },
    { name: 'initech', provisioned_admin: first },
    { name: 'mine', provisioned_admin: null },
  ], 'an invited or IdP administrator is not the one a domain was provisioned for, however early');
});

t.test('0008 revokes the unredeemed codes their creators could no longer issue, and keeps the rest', async (t) => {
  const pool = await emptyPool(t);
  const dir = await mkdtemp(join(tmpdir(), 'tenancy-migrations-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await cp(TENANCY_MIGRATIONS, dir, { recursive: true });
  await rm(join(dir, '0008_invite_codes_by_creator.sql'));
  await runMigrations(pool, 'tenancy', dir);
  // As the previous revision left them: codes made by an administrator removed since, a platform
  // administrator, a business_admin still in place, and one already redeemed by a removed creator.
  const domain = async (name: string) => (await pool.query<{ id: string }>('INSERT INTO domains (name, display_name) VALUES ($1, $1) RETURNING id', [name])).rows[0]!.id;
  const [acme, hq] = [await domain('acme'), await domain('hq')];
  const [removed, platform, current] = [newAccount(), newAccount(), newAccount()];
  await pool.query("INSERT INTO memberships (account_id, domain_id, role) VALUES ($1, $2, 'admin'), ($3, $4, 'business_admin')", [platform, hq, current, acme]);
  const codes: [string, string, string][] = [
    ['a'.repeat(32), 'business_admin', removed],
    ['b'.repeat(32), 'admin', platform],
    ['c'.repeat(32), 'business_admin', current],
    ['d'.repeat(32), 'admin', current],
  ];
  for (const [code, role, creator] of codes) {
    await pool.query("INSERT INTO invite_codes (domain_id, code, role, created_by, expires_at) VALUES ($1, $2, $3, $4, now() + interval '300 days')", [acme, code, role, creator]);
  }
  await pool.query("INSERT INTO invite_codes (domain_id, code, role, created_by, expires_at, redeemed_by, redeemed_at) VALUES ($1, $2, 'member', $3, now(), $4, now())", [acme, 'e'.repeat(32), removed, newAccount()]);

  t.same((await runMigrations(pool, 'tenancy', TENANCY_MIGRATIONS)).applied, ['0008_invite_codes_by_creator']);
  const left = await pool.query<{ code: string }>('SELECT code FROM invite_codes ORDER BY code');
  t.same(left.rows.map((r) => r.code[0]), ['b', 'c', 'e'], 'the removed creator’s and the over-granting code are gone; redeemed ones are history and stay');
});

t.test('a migration edited after it was applied is refused, naming the file', async (t) => {
  const pool = await emptyPool(t);
  const dir = await mkdtemp(join(tmpdir(), 'tenancy-migrations-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await cp(TENANCY_MIGRATIONS, dir, { recursive: true });
  await runMigrations(pool, 'tenancy', dir);
  await appendFile(join(dir, '0002_subdomains.sql'), '\n-- edited\n');
  await t.rejects(runMigrations(pool, 'tenancy', dir), new MigrationError('tenancy migration 0002_subdomains.sql changed after it was applied; add a new migration instead'));
});

t.test('the rules live in the database, not only in code', async (t) => {
  const { pool } = await migratedPool(t);
  const violation = async (sql: string, values: unknown[], code: string, what: string) => {
    await t.rejects(pool.query(sql, values), { code }, what);
  };
  const root = (await pool.query("INSERT INTO domains (name, display_name) VALUES ('root', 'Root') RETURNING id")).rows[0].id as string;
  await violation("INSERT INTO domains (name, display_name) VALUES ('root', 'Again')", [], '23505', 'domain names are unique');
  await violation("INSERT INTO domains (name, display_name) VALUES ('Bad Name', 'x')", [], '23514', 'domain name format');
  await violation("INSERT INTO domains (name, display_name) VALUES ('-dash', 'x')", [], '23514', 'no leading dash');
  await violation("INSERT INTO domains (name, display_name, join_policy) VALUES ('p', 'x', 'open')", [], '23514', 'join policy is an enum');
  await violation("INSERT INTO domains (name, display_name) VALUES ('blank', '  ')", [], '23514', 'display name required');

  const account = newAccount();
  await pool.query("INSERT INTO memberships (account_id, domain_id, role) VALUES ($1, $2, 'member')", [account, root]);
  await violation("INSERT INTO memberships (account_id, domain_id, role) VALUES ($1, $2, 'viewer')", [account, root], '23505', '(account_id, domain_id) is unique');
  await violation("INSERT INTO memberships (account_id, domain_id, role, joined_via) VALUES ($1, $2, 'viewer', 'magic')", [newAccount(), root], '23514', 'joined_via is an enum');
  t.equal((await pool.query('SELECT joined_via FROM memberships WHERE account_id = $1', [account])).rows[0].joined_via, 'invite', 'joined_via defaults to invite');

  const code = (n: string) => [root, n, newAccount()];
  const insertCode = "INSERT INTO invite_codes (domain_id, code, role, created_by, expires_at) VALUES ($1, $2, 'member', $3, now() + interval '1 day')";
  await pool.query(insertCode, code('0123456789abcdef0123456789abcdef'));
  await violation(insertCode, code('0123456789abcdef0123456789abcdef'), '23505', 'codes are unique');
  await violation(insertCode, code('0123456789ABCDEF0123456789ABCDEF'), '23514', 'lowercase hex only');
  await violation(insertCode, code('0123456789abcdef0123456789abcde'), '23514', '32 characters, not 31');
  await violation(insertCode, code('0123456789abcdef0123456789abcdef0'), '23514', '32 characters, not 33');
  await violation(insertCode, code('g123456789abcdef0123456789abcdef'), '23514', 'hex only');
  await violation("UPDATE invite_codes SET redeemed_by = $1", [newAccount()], '23514', 'redeemed_by and redeemed_at go together');

  const child = (await pool.query("INSERT INTO domains (name, display_name, parent_id) VALUES ('child', 'Child', $1) RETURNING id", [root])).rows[0].id as string;
  const grandchild = (await pool.query("INSERT INTO domains (name, display_name, parent_id) VALUES ('grandchild', 'G', $1) RETURNING id", [child])).rows[0].id as string;
  await pool.query("INSERT INTO memberships (account_id, domain_id, role) VALUES ($1, $2, 'member')", [account, grandchild]);
  await pool.query(insertCode, [grandchild, 'fedcba9876543210fedcba9876543210', account]);
  await violation('UPDATE domains SET parent_id = id WHERE id = $1', [root], '23514', 'a domain is not its own parent');
  await pool.query("DELETE FROM domains WHERE name = 'root'");
  t.same((await pool.query('SELECT count(*)::int AS n FROM domains')).rows[0].n, 0, 'deleting a parent deletes its children, recursively');
  t.same((await pool.query('SELECT count(*)::int AS n FROM memberships')).rows[0].n, 0, 'and their memberships');
  t.same((await pool.query('SELECT count(*)::int AS n FROM invite_codes')).rows[0].n, 0, 'and their codes');
});
