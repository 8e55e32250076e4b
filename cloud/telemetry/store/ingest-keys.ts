/**
 * PostgreSQL adapter for per-gateway ingest keys (`ingest_keys`), chosen by `X-Key-Id`.
 */
import { randomBytes } from 'node:crypto';
import type { Pool } from 'pg';

/** 1 to 128 of letters, digits, `.`, `_`, `:` and `-` (the table's CHECK says the same). */
export const KEY_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface IngestKeyStore {
  /** The secret of an active key, or undefined for an unknown or revoked one. */
  secretOf(keyId: string): Promise<string | undefined>;
}

export class PgIngestKeyStore implements IngestKeyStore {
  constructor(private readonly pool: Pool) {}

  async secretOf(keyId: string): Promise<string | undefined> {
    if (!KEY_ID.test(keyId)) return undefined;
    const { rows } = await this.pool.query<{ secret: string }>('SELECT secret FROM ingest_keys WHERE key_id = $1 AND revoked_at IS NULL', [keyId]);
    return rows[0]?.secret;
  }

  /** Adds a key with a fresh random secret (or replaces a revoked one) and returns the secret. */
  async add(keyId: string, note?: string): Promise<string> {
    if (!KEY_ID.test(keyId)) throw new Error('a key id is 1 to 128 of letters, digits, ".", "_", ":" and "-"');
    const secret = randomBytes(32).toString('hex');
    const { rowCount } = await this.pool.query(
      `INSERT INTO ingest_keys (key_id, secret, note) VALUES ($1, $2, $3)
       ON CONFLICT (key_id) DO UPDATE SET secret = EXCLUDED.secret, note = EXCLUDED.note, created_at = now(), revoked_at = NULL
       WHERE ingest_keys.revoked_at IS NOT NULL`,
      [keyId, secret, note ?? null],
    );
    if (rowCount === 0) throw new Error(`key ${keyId} already exists and is active; revoke it first or pick another id`);
    return secret;
  }

  /** Revokes a key; returns false when no active key has that id. */
  async revoke(keyId: string): Promise<boolean> {
    const { rowCount } = await this.pool.query('UPDATE ingest_keys SET revoked_at = now() WHERE key_id = $1 AND revoked_at IS NULL', [keyId]);
    return (rowCount ?? 0) > 0;
  }

  async list(): Promise<Array<{ keyId: string; note: string | null; createdAt: Date; revokedAt: Date | null }>> {
    const { rows } = await this.pool.query<{ key_id: string; note: string | null; created_at: Date; revoked_at: Date | null }>(
      'SELECT key_id, note, created_at, revoked_at FROM ingest_keys ORDER BY key_id',
    );
    return rows.map((r) => ({ keyId: r.key_id, note: r.note, createdAt: r.created_at, revokedAt: r.revoked_at }));
  }
}
