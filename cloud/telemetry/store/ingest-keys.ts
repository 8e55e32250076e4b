/**
 * PostgreSQL adapter for per-gateway ingest keys (`ingest_keys`), chosen by `X-Key-Id`, each with the
 * buildings it may write (`building_ids`; NULL for a key made before keys named buildings: any).
 */
import { randomBytes } from 'node:crypto';
import type { Pool } from 'pg';
import { KEY_ID } from '../../../shared/hmac.js';
import { checkBuildingList } from '../domain/building-scope.js';

export interface ActiveIngestKey {
  secret: string;
  /** null: any building (a key made before keys named buildings). Empty: none. */
  buildingIds: readonly string[] | null;
}

export interface IngestKeyStore {
  /** An active key's secret and buildings, or undefined for an unknown or revoked one. */
  activeKey(keyId: string): Promise<ActiveIngestKey | undefined>;
}

export interface ListedIngestKey {
  keyId: string;
  note: string | null;
  buildingIds: string[] | null;
  createdAt: Date;
  revokedAt: Date | null;
}

function checkedKeyId(keyId: string): string {
  if (!KEY_ID.test(keyId)) throw new Error('a key id is 1 to 128 of letters, digits, ".", "_", ":" and "-"');
  return keyId;
}

function checkedBuildings(buildingIds: readonly string[]): string[] {
  const checked = checkBuildingList(buildingIds);
  if (!checked.ok) throw new Error(checked.problems.join('\n'));
  return checked.buildingIds;
}

export class PgIngestKeyStore implements IngestKeyStore {
  constructor(private readonly pool: Pool) {}

  async activeKey(keyId: string): Promise<ActiveIngestKey | undefined> {
    if (!KEY_ID.test(keyId)) return undefined;
    const { rows } = await this.pool.query<{ secret: string; building_ids: string[] | null }>(
      'SELECT secret, building_ids FROM ingest_keys WHERE key_id = $1 AND revoked_at IS NULL',
      [keyId],
    );
    const row = rows[0];
    return row && { secret: row.secret, buildingIds: row.building_ids };
  }

  /**
   * Adds a key for the given buildings with a fresh random secret (or replaces a revoked one) and
   * returns the secret.
   */
  async add(keyId: string, buildingIds: readonly string[], note?: string): Promise<string> {
    checkedKeyId(keyId);
    const buildings = checkedBuildings(buildingIds);
    const secret = randomBytes(32).toString('hex');
    const { rowCount } = await this.pool.query(
      `INSERT INTO ingest_keys (key_id, secret, note, building_ids) VALUES ($1, $2, $3, $4)
       ON CONFLICT (key_id) DO UPDATE
       SET secret = EXCLUDED.secret, note = EXCLUDED.note, building_ids = EXCLUDED.building_ids, created_at = now(), revoked_at = NULL
       WHERE ingest_keys.revoked_at IS NOT NULL`,
      [keyId, secret, note ?? null, buildings],
    );
    if (rowCount === 0) throw new Error(`key ${keyId} already exists and is active; revoke it first or pick another id`);
    return secret;
  }

  /** Replaces the buildings of an active key, keeping its secret; false when no active key has that id. */
  async bind(keyId: string, buildingIds: readonly string[]): Promise<boolean> {
    checkedKeyId(keyId);
    const buildings = checkedBuildings(buildingIds);
    const { rowCount } = await this.pool.query('UPDATE ingest_keys SET building_ids = $2 WHERE key_id = $1 AND revoked_at IS NULL', [keyId, buildings]);
    return (rowCount ?? 0) > 0;
  }

  /** Revokes a key; returns false when no active key has that id. */
  async revoke(keyId: string): Promise<boolean> {
    const { rowCount } = await this.pool.query('UPDATE ingest_keys SET revoked_at = now() WHERE key_id = $1 AND revoked_at IS NULL', [keyId]);
    return (rowCount ?? 0) > 0;
  }

  async list(): Promise<ListedIngestKey[]> {
    const { rows } = await this.pool.query<{ key_id: string; note: string | null; building_ids: string[] | null; created_at: Date; revoked_at: Date | null }>(
      'SELECT key_id, note, building_ids, created_at, revoked_at FROM ingest_keys ORDER BY key_id',
    );
    return rows.map((r) => ({ keyId: r.key_id, note: r.note, buildingIds: r.building_ids, createdAt: r.created_at, revokedAt: r.revoked_at }));
  }

  /** The active keys that may write any building (made before keys named buildings), by id. */
  async unboundKeyIds(): Promise<string[]> {
    const { rows } = await this.pool.query<{ key_id: string }>('SELECT key_id FROM ingest_keys WHERE building_ids IS NULL AND revoked_at IS NULL ORDER BY key_id');
    return rows.map((r) => r.key_id);
  }
}
