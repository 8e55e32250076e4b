/**
 * The PostgreSQL adapter of {@link RegistryStore}.
 */
import type { Pool } from 'pg';
import type { IdentityMode, LicenseStatus, Organization, OrganizationEvent, Outcome, PendingCursor, PendingPage, RegistryStore, Signup, Status, Tier } from './model.js';
import { transition } from './transitions.js';

const COLUMNS = 'id, name, display_name, tier, host, identity_mode, issuer, license_status, status, status_detail, created_at';

interface OrganizationRow {
  id: string;
  name: string;
  display_name: string;
  tier: Tier;
  host: string;
  identity_mode: IdentityMode;
  issuer: string;
  license_status: LicenseStatus;
  status: Status;
  status_detail: string | null;
  created_at: Date;
}

interface PendingRow extends OrganizationRow {
  cursor_created_at: string;
}

const PENDING_SELECT = `SELECT ${COLUMNS}, created_at::text AS cursor_created_at FROM organizations WHERE status = 'provisioning'`;

function organizationOf(row: OrganizationRow): Organization {
  return {
    id: row.id,
    name: row.name,
    displayName: row.display_name,
    tier: row.tier,
    host: row.host,
    identityMode: row.identity_mode,
    issuer: row.issuer,
    licenseStatus: row.license_status,
    status: row.status,
    statusDetail: row.status_detail,
    createdAt: row.created_at,
  };
}

export class PgRegistryStore implements RegistryStore {
  private readonly pool: Pool;

  constructor(pool: Pool) {
    this.pool = pool;
  }

  async createOrganization(signup: Signup): Promise<Outcome<Organization, 'name_taken'>> {
    const inserted = await this.pool.query<OrganizationRow>(
      `INSERT INTO organizations (name, display_name, tier, identity_mode, issuer)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT ((lower(name))) DO NOTHING
       RETURNING ${COLUMNS}`,
      [signup.name, signup.displayName, signup.tier, signup.identityMode, signup.issuer],
    );
    const row = inserted.rows[0];
    return row ? { ok: true, value: organizationOf(row) } : { ok: false, reason: 'name_taken' };
  }

  /**
   * Keyset pages on (created_at, id), which organizations_provisioning_idx holds in order: each page is
   * one short query however long the list. The cursor keeps created_at as PostgreSQL's text, exact to
   * the microsecond; a Date would round it to the millisecond and skip or repeat rows.
   */
  async pendingOrganizations(page: { after?: PendingCursor; limit: number }): Promise<PendingPage> {
    const { after, limit } = page;
    const result =
      after === undefined
        ? await this.pool.query<PendingRow>(`${PENDING_SELECT} ORDER BY created_at, id LIMIT $1`, [limit])
        : await this.pool.query<PendingRow>(`${PENDING_SELECT} AND (created_at, id) > ($2::timestamptz, $3::uuid) ORDER BY created_at, id LIMIT $1`, [
            limit,
            after.createdAt,
            after.id,
          ]);
    const last = result.rows.at(-1);
    const organizations = result.rows.map(organizationOf);
    return last !== undefined && result.rows.length === limit ? { organizations, next: { createdAt: last.cursor_created_at, id: last.id } } : { organizations };
  }

  async applyEvent(id: string, event: OrganizationEvent): Promise<Outcome<Organization, 'not_found' | 'refused'>> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const locked = await client.query<OrganizationRow>(`SELECT ${COLUMNS} FROM organizations WHERE id = $1 FOR UPDATE`, [id]);
      const row = locked.rows[0];
      if (!row) {
        await client.query('ROLLBACK');
        return { ok: false, reason: 'not_found' };
      }
      const current = organizationOf(row);
      const next = transition(current, event);
      if (!next.ok) {
        await client.query('ROLLBACK');
        return { ok: false, reason: 'refused', current };
      }
      if (!next.changed) {
        await client.query('COMMIT');
        return { ok: true, value: current };
      }
      const updated = await client.query<OrganizationRow>(
        `UPDATE organizations SET status = $2, license_status = $3, status_detail = $4 WHERE id = $1 RETURNING ${COLUMNS}`,
        [id, next.status, next.licenseStatus, next.statusDetail],
      );
      await client.query('COMMIT');
      const updatedRow = updated.rows[0];
      if (!updatedRow) throw new Error('locked organization vanished');
      return { ok: true, value: organizationOf(updatedRow) };
    } catch (err) {
      await client.query('ROLLBACK').catch((rollbackError: Error) => {
        broken = rollbackError;
      });
      throw err;
    } finally {
      client.release(broken);
    }
  }
}
