/**
 * The PostgreSQL adapter of {@link TenancyStore}. Every rule that must hold under concurrency is held
 * by the database: unique names and memberships by constraints, invite redemption by one conditional
 * UPDATE, the last-administrator rule by a row lock on the domain, a deleted account's absence by a
 * lock per account.
 */
import type { Pool, PoolClient } from 'pg';
import { canManageDomain } from '../../shared/roles.js';
import type { Domain, InviteCode, JoinPolicy, JoinedVia, ListedDomain, Membership, NewDomain, NewInviteCode, NewMember, Outcome, Page, TenancyStore } from './model.js';
import { BatchedLookup, type BatchedLookupOptions } from './batched-lookup.js';
import { inviteCodeRefusal, leavesNoAdministrator, mayIssueInviteCode, type InviteCodeRefusal } from './policy.js';

const DOMAIN_COLUMNS = 'd.id, d.name, d.display_name, d.join_policy, d.is_public, d.created_at, d.parent_id';

/**
 * One page of listed domains with member counts: the page is chosen first by keyset (never OFFSET),
 * then joined to one grouped count over the page's domains only (never a per-row subquery).
 */
function listingSql(where: string): string {
  return `
WITH page AS (
  SELECT ${DOMAIN_COLUMNS} FROM domains d
  WHERE ${where} AND d.name > $1
  ORDER BY d.name
  LIMIT $2
), counts AS (
  SELECT m.domain_id, count(*)::int AS member_count
  FROM memberships m
  WHERE m.domain_id IN (SELECT id FROM page)
  GROUP BY m.domain_id
)
SELECT page.*, coalesce(counts.member_count, 0) AS member_count
FROM page LEFT JOIN counts ON counts.domain_id = page.id
ORDER BY page.name`;
}

export const PUBLIC_DOMAINS_SQL = listingSql('d.is_public');
export const SUBDOMAINS_SQL = listingSql('d.parent_id = $3');
export const PUBLIC_SUBDOMAINS_SQL = listingSql('d.parent_id = $3 AND d.is_public');

/** The login path: one index range scan on memberships' primary key, joined to domains by id. */
export const MEMBERSHIPS_OF_SQL = `
SELECT m.account_id, m.domain_id, d.name AS domain_name, m.role, m.external_id, m.joined_via
FROM memberships m JOIN domains d ON d.id = m.domain_id
WHERE m.account_id = $1::uuid
ORDER BY d.name`;

/**
 * The login path as the store runs it: the same query for every account of a batch of concurrent
 * logins at once, still one index scan on memberships' primary key (`= ANY` over the leading column).
 */
export const MEMBERSHIPS_OF_MANY_SQL = `
SELECT m.account_id, m.domain_id, d.name AS domain_name, m.role, m.external_id, m.joined_via
FROM memberships m JOIN domains d ON d.id = m.domain_id
WHERE m.account_id = ANY($1::uuid[])
ORDER BY m.account_id, d.name`;

/**
 * Redemption's check-and-mark in one statement. `$1::text` is the column's own type, so the lookup
 * goes through invite_codes_code_key; a cast on the column side (e.g. `code::uuid`) would not.
 * Racing redeemers queue on the row lock and re-check the WHERE clause, so exactly one sees a row.
 * The domain is locked FOR KEY SHARE before the code, in the order a deletion of the domain takes
 * them: locked after, by the membership's foreign key, a deletion arriving in between held the domain
 * and waited for the code, and one of the two was killed as a deadlock. A domain deleted first is
 * skipped, and the code reads as invalid.
 */
export const REDEEM_SQL = `
WITH d AS (
  SELECT d.id, d.name FROM invite_codes c JOIN domains d ON d.id = c.domain_id
  WHERE c.code = $1::text
  FOR KEY SHARE OF d
)
UPDATE invite_codes AS c
SET redeemed_by = $2::uuid, redeemed_at = now()
FROM d
WHERE c.code = $1::text AND c.redeemed_at IS NULL AND c.expires_at > now() AND d.id = c.domain_id
RETURNING c.domain_id, c.role, d.name AS domain_name`;

/**
 * The codes an account made that can still be redeemed (expired ones too: deleting those changes
 * nothing a caller sees). Looked up through invite_codes_unredeemed_created_by_idx: the table keeps
 * every code ever redeemed, and a removal holds its domain locked while it reads this.
 */
export const UNREDEEMED_CODES_OF_SQL = `
SELECT c.id, d.name AS domain_name, c.role
FROM invite_codes c JOIN domains d ON d.id = c.domain_id
WHERE c.created_by = $1::uuid AND c.redeemed_at IS NULL`;

/**
 * A deleted account's memberships stay gone. Every write that adds a membership holds the account's
 * advisory lock shared and then looks for the deletion record; removeAccount holds the lock exclusively
 * while it records the deletion and deletes. So a write either commits first, and the deletion (which
 * waited for it) removes what it added, or comes after and finds the record. The look-up is a statement
 * of its own: a statement's snapshot is taken before it waits for a lock, so a look-up in the same
 * statement would miss a deletion committed while it waited. The first key keeps these locks apart from
 * every other advisory lock in the database.
 *
 * The same lock orders what an account may do against what it loses: removeMember holds it exclusively
 * while it deletes a membership and revokes the codes that go with it, and every write a manager's right
 * allows (createInviteCode, addMember by an inviter, createDomain under a parent) holds it shared while
 * it reads the acting account's memberships (see storedRefusal) and writes. So a creation either commits
 * first, and the removal (which waited for it) revokes its code, or reads the memberships the removal
 * left; and two removals of one account from different domains take turns, the second seeing the
 * first's delete.
 *
 * Lock order, in every transaction: account locks first, then domain row locks (FOR KEY SHARE by writes
 * that add rows under a domain, FOR UPDATE by removeMember, the UPDATE by ensureDomain recording an
 * administrator), then the rows under the domain. No transaction takes an account lock while it holds
 * a domain lock. Only addMember by an inviter and redeemInviteCode (the redeemer's and the code's
 * creator's) take two account locks, both shared, in one statement and in key order; removeMember by a
 * manager takes the removed account's exclusively and the remover's shared, in one statement and in key
 * order; a transaction holding one exclusively takes no other. So none of them wait in a cycle.
 */
const ACCOUNT_LOCKS = 0x7e4a_0001;
/** The subquery's ORDER BY (which keeps it from being flattened) is the order the locks are taken in. */
const LOCK_ACCOUNTS_SHARED_SQL = `
SELECT pg_advisory_xact_lock_shared(${ACCOUNT_LOCKS}, k.key)
FROM (SELECT DISTINCT hashtext(a::text) AS key FROM unnest($1::uuid[]) AS a ORDER BY key) AS k`;
const LOCK_ACCOUNT_SQL = `SELECT pg_advisory_xact_lock(${ACCOUNT_LOCKS}, hashtext($1::uuid::text))`;
/**
 * A removal by a manager: the removed account's lock exclusively ($1), the remover's shared ($2), in key
 * order as LOCK_ACCOUNTS_SHARED_SQL takes them, so two managers removing each other wait in turn, not in
 * a cycle (on a shared key, exclusive first: a session may then take it shared as well).
 */
const LOCK_REMOVAL_SQL = `
SELECT CASE WHEN k.removed THEN pg_advisory_xact_lock(${ACCOUNT_LOCKS}, k.key) ELSE pg_advisory_xact_lock_shared(${ACCOUNT_LOCKS}, k.key) END
FROM (SELECT hashtext(a::text) AS key, a = $1::uuid AS removed FROM unnest(ARRAY[$1::uuid, $2::uuid]) AS a ORDER BY key, removed DESC) AS k`;
const DELETED_AMONG_SQL = 'SELECT account_id FROM deleted_accounts WHERE account_id = ANY($1::uuid[])';

/**
 * A provisioned domain whose administrator was not recorded (created before migration 0007, or by a
 * replica of the previous revision during a rolling deploy) takes `$2` as its administrator when `$2`
 * is its business_admin the way provisioning made it one (joined_via 'local', as 0007's backfill
 * counts it): the call naming it is then the first call's retry. A concurrent retry that recorded the
 * same administrator first still matches; one that recorded another does not.
 */
const ADOPT_PROVISIONED_ADMIN_SQL = `
UPDATE domains d SET provisioned_admin = $2::uuid
WHERE d.id = $1::uuid
  AND (d.provisioned_admin IS NULL OR d.provisioned_admin = $2::uuid)
  AND EXISTS (
    SELECT 1 FROM memberships m
    WHERE m.domain_id = d.id AND m.account_id = $2::uuid AND m.role = 'business_admin' AND m.joined_via = 'local')
RETURNING d.id`;

const INSERT_MEMBERSHIP_SQL = `
INSERT INTO memberships (account_id, domain_id, role, external_id, joined_via)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (account_id, domain_id) DO NOTHING
RETURNING account_id, domain_id, role, external_id, joined_via`;

/**
 * Adds a membership or returns the existing one, in one statement, so no concurrent delete can fall
 * between "it exists" and reading it (which once answered "domain not found" for a domain that
 * exists). DO UPDATE, unlike DO NOTHING, locks and returns the conflicting row; if that row is deleted
 * meanwhile, PostgreSQL retries the insert. The update writes the row's own role back: nothing changes.
 * `xmax = 0` holds only for the version this statement inserted (an updated one carries our lock), so
 * it tells a new membership from an existing one. FOR KEY SHARE skips a domain deleted concurrently,
 * which then reads as not found instead of failing the foreign key.
 */
export const ADD_MEMBER_SQL = `
INSERT INTO memberships AS m (account_id, domain_id, role, external_id, joined_via)
SELECT $2, d.id, $3, $4, $5 FROM domains d WHERE d.name = $1 FOR KEY SHARE
ON CONFLICT (account_id, domain_id) DO UPDATE SET role = m.role
RETURNING m.account_id, m.domain_id, m.role, m.external_id, m.joined_via, (m.xmax = 0) AS created`;

interface DomainRow {
  id: string;
  name: string;
  display_name: string;
  join_policy: JoinPolicy;
  is_public: boolean;
  created_at: Date;
  parent_id: string | null;
}

interface MembershipRow {
  account_id: string;
  domain_id: string;
  domain_name?: string;
  role: string;
  external_id: string | null;
  joined_via: JoinedVia;
}

function domainOf(row: DomainRow): Domain {
  return {
    id: row.id,
    name: row.name,
    displayName: row.display_name,
    joinPolicy: row.join_policy,
    isPublic: row.is_public,
    createdAt: row.created_at,
    parentId: row.parent_id,
  };
}

function membershipOf(row: MembershipRow, domainName: string): Membership {
  return {
    accountId: row.account_id,
    domainId: row.domain_id,
    domainName,
    role: row.role,
    externalId: row.external_id,
    joinedVia: row.joined_via,
  };
}

const ok = <T>(value: T): { ok: true; value: T } => ({ ok: true, value });
const fail = <E extends string>(reason: E): { ok: false; reason: E } => ({ ok: false, reason });

function sameDomain(existing: Domain, wanted: NewDomain, parentId: string | null): boolean {
  return (
    existing.displayName === wanted.displayName &&
    existing.joinPolicy === wanted.joinPolicy &&
    existing.isPublic === wanted.isPublic &&
    existing.parentId === parentId
  );
}

export interface PgTenancyStoreOptions {
  /**
   * How concurrent logins share queries (see batched-lookup.ts). Default: up to 4 batches at once
   * (4 of the pool's connections), 128 accounts per batch.
   */
  loginBatches?: BatchedLookupOptions;
}

export class PgTenancyStore implements TenancyStore {
  private readonly pool: Pool;
  private readonly logins: BatchedLookup<Membership[]>;

  constructor(pool: Pool, options: PgTenancyStoreOptions = {}) {
    this.pool = pool;
    this.logins = new BatchedLookup((accountIds) => this.membershipsOfMany(accountIds), () => [], options.loginBatches ?? { maxInFlight: 4, maxBatch: 128 });
  }

  /** Runs `work` in a transaction; an outcome that is not ok rolls back everything it wrote. */
  private async transaction<T, E extends string>(work: (client: PoolClient) => Promise<Outcome<T, E>>): Promise<Outcome<T, E>> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const outcome = await work(client);
      await client.query(outcome.ok ? 'COMMIT' : 'ROLLBACK');
      return outcome;
    } catch (err) {
      await client.query('ROLLBACK').catch((rollbackError: Error) => {
        broken = rollbackError;
      });
      throw err;
    } finally {
      client.release(broken);
    }
  }

  /**
   * Holds the accounts' locks (shared) to the end of the transaction, then tells which of them were
   * deleted (lower-cased). Taken before any domain lock, in every write, so the two kinds never wait in
   * a cycle.
   */
  private async lockAccounts(client: PoolClient, accountIds: readonly string[]): Promise<Set<string>> {
    await client.query(LOCK_ACCOUNTS_SHARED_SQL, [accountIds]);
    const deleted = await client.query<{ account_id: string }>(DELETED_AMONG_SQL, [accountIds]);
    return new Set(deleted.rows.map((row) => row.account_id));
  }

  /** lockAccounts for one account: whether it was deleted. */
  private async accountDeleted(client: PoolClient, accountId: string): Promise<boolean> {
    return (await this.lockAccounts(client, [accountId])).has(accountId.toLowerCase());
  }

  /**
   * The id of the domain named `name`, held FOR KEY SHARE: a concurrent deletion of it waits until the
   * rows added under it are in, and a domain deleted first is skipped and reads as not found, where a
   * plain read let the insert fail the foreign key (a 500).
   */
  private async domainIdOf(client: PoolClient, name: string): Promise<string | undefined> {
    const domain = await client.query<{ id: string }>('SELECT id FROM domains WHERE name = $1 FOR KEY SHARE', [name]);
    return domain.rows[0]?.id;
  }

  private async parentIdOf(client: PoolClient, parentName: string | undefined): Promise<string | null | undefined> {
    return parentName === undefined ? null : this.domainIdOf(client, parentName);
  }

  /**
   * Why `accountId`'s memberships as stored refuse it what the route let its token do: manage `domain`
   * and, when `role` is given, grant that role there (inviteCodeRefusal). A token outlives a removal,
   * so every write a manager's right allows asks this again: an invite code, a direct invitation, a
   * subdomain. The caller holds the account's lock (see ACCOUNT_LOCKS), so a removal of it under way has
   * committed before this reads.
   */
  private async storedRefusal(client: PoolClient, accountId: string, domain: string, role?: string): Promise<InviteCodeRefusal | undefined> {
    const stored = await client.query<{ domain_name: string; role: string }>(MEMBERSHIPS_OF_SQL, [accountId]);
    const memberships = stored.rows.map((m) => ({ domainName: m.domain_name, role: m.role }));
    if (role !== undefined) return inviteCodeRefusal(memberships, domain, role);
    return canManageDomain(memberships, domain) ? undefined : 'may_not_manage';
  }

  /**
   * Inserts a domain unless its name is taken. `provisioned` marks one an internal call created, with
   * the administrator that call named (null for none): only a call naming the same is its retry.
   */
  private async insertDomain(client: PoolClient, input: NewDomain, parentId: string | null, provisioned: { admin: string | null } | false): Promise<Domain | undefined> {
    const inserted = await client.query<DomainRow>(
      `INSERT INTO domains AS d (name, display_name, join_policy, is_public, parent_id, provisioned, provisioned_admin)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (name) DO NOTHING
       RETURNING ${DOMAIN_COLUMNS}`,
      [input.name, input.displayName, input.joinPolicy, input.isPublic, parentId, provisioned !== false, provisioned === false ? null : provisioned.admin],
    );
    const row = inserted.rows[0];
    return row ? domainOf(row) : undefined;
  }

  /**
   * A subdomain's creator must manage the parent by its memberships as stored (see storedRefusal): a
   * removed administrator's token would otherwise still create domains under it, each making her their
   * business_admin.
   */
  createDomain(
    input: NewDomain & { parentName?: string },
    creatorId: string,
  ): Promise<Outcome<Domain, 'name_taken' | 'parent_not_found' | 'account_deleted' | 'may_not_manage'>> {
    return this.transaction(async (client) => {
      if (await this.accountDeleted(client, creatorId)) return fail('account_deleted');
      const parentId = await this.parentIdOf(client, input.parentName);
      if (parentId === undefined) return fail('parent_not_found');
      if (input.parentName !== undefined && (await this.storedRefusal(client, creatorId, input.parentName)) !== undefined) return fail('may_not_manage');
      const domain = await this.insertDomain(client, input, parentId, false);
      if (!domain) return fail('name_taken');
      await client.query(INSERT_MEMBERSHIP_SQL, [creatorId, domain.id, 'business_admin', null, 'local']);
      return ok(domain);
    });
  }

  ensureDomain(
    input: NewDomain & { parentName?: string; adminAccountId?: string },
  ): Promise<Outcome<Domain, 'parent_not_found' | 'conflicting_domain' | 'account_deleted'>> {
    return this.transaction(async (client) => {
      if (input.adminAccountId !== undefined && (await this.accountDeleted(client, input.adminAccountId))) return fail('account_deleted');
      const parentId = await this.parentIdOf(client, input.parentName);
      if (parentId === undefined) return fail('parent_not_found');
      const admin = input.adminAccountId ?? null;
      let domain = await this.insertDomain(client, input, parentId, { admin });
      for (let attempt = 1; !domain; attempt++) {
        // A concurrent or earlier call created it; ON CONFLICT waited for that to commit. Read FOR KEY
        // SHARE: an operator's deletion racing this retry either committed first (it is then created
        // afresh, as for a call just after the deletion) or waits for this transaction, so neither the
        // adoption nor the membership below meets a row gone (the foreign key's 500).
        const existing = await client.query<DomainRow & { provisioned: boolean; provisioned_admin: string | null }>(
          `SELECT ${DOMAIN_COLUMNS}, d.provisioned, d.provisioned_admin FROM domains d WHERE d.name = $1 FOR KEY SHARE`,
          [input.name],
        );
        const row = existing.rows[0];
        if (!row) {
          if (attempt >= 3) throw new Error('domain kept being created and deleted meanwhile');
          domain = await this.insertDomain(client, input, parentId, { admin });
          continue;
        }
        domain = domainOf(row);
        // Only a domain an internal call created is a replay: one an end user created under this name
        // is theirs, and must not be handed (with its administrator) to the caller's organization. Nor
        // is one created for another administrator: another organization whose name derived alike.
        if (!row.provisioned || !sameDomain(domain, input, parentId)) return fail('conflicting_domain');
        if (row.provisioned_admin !== admin && !(await this.adoptedProvisionedAdmin(client, domain.id, row.provisioned_admin, admin))) return fail('conflicting_domain');
      }
      if (input.adminAccountId !== undefined) {
        await client.query(INSERT_MEMBERSHIP_SQL, [input.adminAccountId, domain.id, 'business_admin', null, 'local']);
      }
      return ok(domain);
    });
  }

  /**
   * Whether a provisioned domain with no recorded administrator was in fact provisioned for `admin`
   * (see ADOPT_PROVISIONED_ADMIN_SQL), recording it if so. A domain recorded with an administrator,
   * or a call naming none, never is.
   */
  private async adoptedProvisionedAdmin(client: PoolClient, domainId: string, recorded: string | null, admin: string | null): Promise<boolean> {
    if (recorded !== null || admin === null) return false;
    const adopted = await client.query(ADOPT_PROVISIONED_ADMIN_SQL, [domainId, admin]);
    return (adopted.rowCount ?? 0) > 0;
  }

  async findDomain(name: string): Promise<Domain | undefined> {
    const result = await this.pool.query<DomainRow>(`SELECT ${DOMAIN_COLUMNS} FROM domains d WHERE d.name = $1`, [name]);
    const row = result.rows[0];
    return row ? domainOf(row) : undefined;
  }

  async listPublicDomains(page: Page & { limit: number }): Promise<ListedDomain[]> {
    const result = await this.pool.query<DomainRow & { member_count: number }>(PUBLIC_DOMAINS_SQL, [page.after ?? '', page.limit]);
    return result.rows.map((row) => ({ ...domainOf(row), memberCount: row.member_count }));
  }

  async listSubdomains(parentName: string, page: Page & { limit: number }, visible: 'all' | 'public'): Promise<ListedDomain[] | undefined> {
    const parent = await this.findDomain(parentName);
    if (!parent) return undefined;
    const sql = visible === 'all' ? SUBDOMAINS_SQL : PUBLIC_SUBDOMAINS_SQL;
    const result = await this.pool.query<DomainRow & { member_count: number }>(sql, [page.after ?? '', page.limit, parent.id]);
    return result.rows.map((row) => ({ ...domainOf(row), memberCount: row.member_count }));
  }

  membershipsOf(accountId: string): Promise<Membership[]> {
    return this.logins.load(accountId);
  }

  private async membershipsOfMany(accountIds: string[]): Promise<Map<string, Membership[]>> {
    const result = await this.pool.query<MembershipRow & { domain_name: string }>({
      name: 'tenancy_memberships_of_many',
      text: MEMBERSHIPS_OF_MANY_SQL,
      values: [accountIds],
    });
    const byAccount = new Map<string, Membership[]>();
    for (const row of result.rows) {
      const list = byAccount.get(row.account_id);
      const membership = membershipOf(row, row.domain_name);
      if (list) list.push(membership);
      else byAccount.set(row.account_id, [membership]);
    }
    return byAccount;
  }

  /**
   * An inviter is checked as createInviteCode checks a code's creator, and before the invitee, so a
   * caller without the right learns nothing about it: her account lock is held (shared, with the
   * invitee's; see ACCOUNT_LOCKS), a deleted inviter adds no one, and her stored memberships must allow
   * the invitation. Without that, a removed administrator's token added her back for good.
   */
  addMember(
    domainName: string,
    member: NewMember,
    onExisting: 'keep' | 'refuse',
  ): Promise<
    Outcome<{ membership: Membership; created: boolean }, 'domain_not_found' | 'already_member' | 'account_deleted' | 'inviter_deleted' | InviteCodeRefusal>
  > {
    return this.transaction(async (client) => {
      const inviter = member.invitedBy;
      const deleted = await this.lockAccounts(client, inviter === undefined ? [member.accountId] : [inviter, member.accountId]);
      if (inviter !== undefined) {
        if (deleted.has(inviter.toLowerCase())) return fail('inviter_deleted');
        if ((await this.domainIdOf(client, domainName)) === undefined) return fail('domain_not_found');
        const refusal = await this.storedRefusal(client, inviter, domainName, member.role);
        if (refusal !== undefined) return fail(refusal);
      }
      if (deleted.has(member.accountId.toLowerCase())) return fail('account_deleted');
      const upserted = await client.query<MembershipRow & { created: boolean }>(ADD_MEMBER_SQL, [
        domainName,
        member.accountId,
        member.role,
        member.externalId ?? null,
        member.joinedVia,
      ]);
      const row = upserted.rows[0];
      if (!row) return fail('domain_not_found');
      if (!row.created && onExisting === 'refuse') return fail('already_member');
      return ok({ membership: membershipOf(row, domainName), created: row.created });
    });
  }

  removeMember(
    domainName: string,
    accountId: string,
    remover?: string,
  ): Promise<Outcome<Membership, 'domain_not_found' | 'not_member' | 'last_administrator' | 'remover_deleted' | 'may_not_manage'>> {
    return this.transaction(async (client) => {
      // The account lock first (see ACCOUNT_LOCKS): a code creation by this account under way commits
      // before the revocation below reads its codes, and another removal of it, from another domain,
      // commits before this one reads the memberships it keeps. A remover's lock is held shared, as an
      // inviter's is, so a removal of the remover under way has committed before her right is read.
      const removedBy = remover === undefined || remover.toLowerCase() === accountId.toLowerCase() ? undefined : remover.toLowerCase();
      if (removedBy === undefined) await client.query(LOCK_ACCOUNT_SQL, [accountId]);
      else {
        await client.query(LOCK_REMOVAL_SQL, [accountId, removedBy]);
        if ((await client.query(DELETED_AMONG_SQL, [[removedBy]])).rows.length > 0) return fail('remover_deleted');
      }
      // The domain row lock serialises every removal in this domain, so the administrator count read
      // below cannot be stale: two administrators removing each other take turns, and the second sees
      // the first's delete. FOR UPDATE also briefly holds off new members (their FK check takes KEY
      // SHARE); that is the price of a lock that is obviously correct.
      const domain = await client.query<{ id: string }>('SELECT id FROM domains WHERE name = $1 FOR UPDATE', [domainName]);
      const domainId = domain.rows[0]?.id;
      if (domainId === undefined) return fail('domain_not_found');
      // A manager's right as stored, not as her token lists it: a removed administrator's token would
      // otherwise go on removing the members she left behind.
      if (removedBy !== undefined && (await this.storedRefusal(client, removedBy, domainName)) !== undefined) return fail('may_not_manage');
      const target = await client.query<MembershipRow>(
        'SELECT account_id, domain_id, role, external_id, joined_via FROM memberships WHERE domain_id = $1 AND account_id = $2',
        [domainId, accountId],
      );
      const row = target.rows[0];
      if (!row) return fail('not_member');
      const counts = await client.query<{ role: string; members: number }>(
        'SELECT role, count(*)::int AS members FROM memberships WHERE domain_id = $1 GROUP BY role',
        [domainId],
      );
      const roleCounts = Object.fromEntries(counts.rows.map((r) => [r.role, r.members]));
      if (leavesNoAdministrator(roleCounts, row.role)) return fail('last_administrator');
      await client.query('DELETE FROM memberships WHERE domain_id = $1 AND account_id = $2', [domainId, accountId]);
      await this.revokeCodesBeyondRights(client, accountId);
      return ok(membershipOf(row, domainName));
    });
  }

  /**
   * A code lives only as long as its creator may create it: after `accountId` lost a membership, its
   * unredeemed codes that its remaining memberships no longer allow it to issue are deleted, so they
   * answer like unknown ones. Its codes for the domain it left go (unless it is a platform
   * administrator, who could issue them again at once); a platform administrator's codes for domains
   * it is no member of go only with the membership that made it one. Runs in the removal's
   * transaction, after its DELETE: a redemption of one of these codes either committed before (the
   * code is redeemed, and stays) or finds it gone.
   */
  private async revokeCodesBeyondRights(client: PoolClient, accountId: string): Promise<void> {
    const codes = await client.query<{ id: string; domain_name: string; role: string }>(UNREDEEMED_CODES_OF_SQL, [accountId]);
    if (codes.rows.length === 0) return;
    const remaining = await client.query<{ domain_name: string; role: string }>(MEMBERSHIPS_OF_SQL, [accountId]);
    const memberships = remaining.rows.map((m) => ({ domainName: m.domain_name, role: m.role }));
    const revoked = codes.rows.filter((c) => !mayIssueInviteCode(memberships, c.domain_name, c.role)).map((c) => c.id);
    if (revoked.length > 0) await client.query('DELETE FROM invite_codes WHERE id = ANY($1::uuid[]) AND redeemed_at IS NULL', [revoked]);
  }

  /**
   * The creator's right is read from its memberships as stored, not from its token: a removed
   * administrator's token outlives her membership, and with it she made a fresh code after the removal
   * had revoked her old ones. The account lock (shared; see ACCOUNT_LOCKS) holds off a removal of the
   * creator until the code is committed, so the removal's revocation sees it; and a deleted creator
   * makes none, as removeAccount revokes the codes of any creation that committed first. The domain is
   * locked FOR KEY SHARE, as in ADD_MEMBER_SQL: a domain deleted concurrently reads as not found, not
   * as a foreign-key failure. The expiry is the creation time plus the lifetime, both on the
   * database's clock, which redemption checks it against.
   */
  createInviteCode(input: NewInviteCode): Promise<Outcome<InviteCode, 'domain_not_found' | 'account_deleted' | InviteCodeRefusal>> {
    return this.transaction(async (client) => {
      if (await this.accountDeleted(client, input.createdBy)) return fail('account_deleted');
      const domainId = await this.domainIdOf(client, input.domainName);
      if (domainId === undefined) return fail('domain_not_found');
      const refusal = await this.storedRefusal(client, input.createdBy, input.domainName, input.role);
      if (refusal !== undefined) return fail(refusal);
      const inserted = await client.query<{ code: string; role: string; expires_at: Date }>(
        `INSERT INTO invite_codes (domain_id, code, role, created_by, created_at, expires_at)
         VALUES ($1, $2, $3, $4, now(), now() + $5::bigint * interval '1 millisecond')
         RETURNING code, role, expires_at`,
        [domainId, input.code, input.role, input.createdBy, input.lifetimeMs],
      );
      const row = inserted.rows[0];
      if (!row) throw new Error('invite code insert returned no row');
      return ok({ code: row.code, domainName: input.domainName, role: row.role, expiresAt: row.expires_at });
    });
  }

  /**
   * The creator's right is read again at redemption, from her memberships as stored: a removal
   * revokes her codes (revokeCodesBeyondRights), but a right lost any other way (the domain that made
   * her a platform administrator deleted, its memberships going by cascade; a removal handled by a
   * replica of an earlier revision) left them redeemable, an `admin` code among them. Her account lock
   * is held shared with the redeemer's, so a removal of her under way has committed before this reads.
   */
  redeemInviteCode(code: string, accountId: string): Promise<Outcome<Membership, 'invalid_code' | 'already_member' | 'account_deleted'>> {
    return this.transaction(async (client) => {
      const creator = (await client.query<{ created_by: string }>('SELECT created_by FROM invite_codes WHERE code = $1::text', [code])).rows[0]?.created_by;
      // Rolling back (any outcome but ok) leaves the code unredeemed for a live account.
      const deleted = await this.lockAccounts(client, creator === undefined ? [accountId] : [accountId, creator]);
      if (deleted.has(accountId.toLowerCase())) return fail('account_deleted');
      const redeemed = await client.query<{ domain_id: string; role: string; domain_name: string }>(REDEEM_SQL, [code, accountId]);
      const grant = redeemed.rows[0];
      if (!grant || creator === undefined) return fail('invalid_code');
      if ((await this.storedRefusal(client, creator, grant.domain_name, grant.role)) !== undefined) return fail('invalid_code');
      const inserted = await client.query<MembershipRow>(INSERT_MEMBERSHIP_SQL, [accountId, grant.domain_id, grant.role, null, 'invite']);
      const row = inserted.rows[0];
      // Rolling back leaves the code unredeemed for someone who is not a member yet.
      if (!row) return fail('already_member');
      return ok(membershipOf(row, grant.domain_name));
    });
  }

  async removeAccount(accountId: string): Promise<number> {
    const removed = await this.transaction(async (client) => {
      // Waits for every write adding a membership for this account that is under way; its DELETE,
      // a later statement, then sees what they added.
      await client.query(LOCK_ACCOUNT_SQL, [accountId]);
      await client.query('INSERT INTO deleted_accounts (account_id) VALUES ($1) ON CONFLICT (account_id) DO NOTHING', [accountId]);
      const deleted = await client.query('DELETE FROM memberships WHERE account_id = $1', [accountId]);
      // With no membership left it may issue no code: every unredeemed one it made goes, in every domain.
      await client.query('DELETE FROM invite_codes WHERE created_by = $1 AND redeemed_at IS NULL', [accountId]);
      return ok(deleted.rowCount ?? 0);
    });
    return removed.ok ? removed.value : 0;
  }
}
