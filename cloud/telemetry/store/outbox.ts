/**
 * PostgreSQL adapter for the alert outbox: rows are written by the ingest transaction and handed to
 * Kafka by the relay. A batch of unsent rows is locked (SKIP LOCKED, so replicas share the work), sent,
 * and marked sent in the same transaction; a failed send leaves them unsent for the next attempt.
 */
import type { Pool } from 'pg';
import type { AlertEvent } from '../domain/alerts.js';
import { inTransaction } from './tx.js';

export interface OutboxMessage {
  key: string;
  alert: AlertEvent;
}

export interface OutboxStore {
  /** Sends up to `limit` unsent alerts, oldest first, with `send`; returns how many were sent. */
  relay(limit: number, send: (messages: OutboxMessage[]) => Promise<void>): Promise<number>;
  /** How many alerts wait to be sent. */
  unsent(): Promise<number>;
}

export class PgOutboxStore implements OutboxStore {
  constructor(private readonly pool: Pool) {}

  relay(limit: number, send: (messages: OutboxMessage[]) => Promise<void>): Promise<number> {
    return inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<{ alert_id: string; message_key: string; payload: AlertEvent }>(
        'SELECT alert_id, message_key, payload FROM alert_outbox WHERE sent_at IS NULL ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED',
        [limit],
      );
      if (rows.length === 0) return 0;
      await send(rows.map((r) => ({ key: r.message_key, alert: r.payload })));
      await client.query('UPDATE alert_outbox SET sent_at = now() WHERE alert_id = ANY($1::text[])', [rows.map((r) => r.alert_id)]);
      return rows.length;
    });
  }

  async unsent(): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>('SELECT count(*) AS n FROM alert_outbox WHERE sent_at IS NULL');
    return Number(rows[0]?.n ?? 0);
  }
}
