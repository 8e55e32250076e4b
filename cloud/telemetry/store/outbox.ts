/**
 * PostgreSQL adapter for the alert outbox: rows are written by the ingest transaction and handed to
 * Kafka by the relay. One replica relays at a time (RELAY_LOCK; the others find it taken and send
 * nothing), and ingest commits rows in seq order (OUTBOX_LOCK, readings.ts), so rows reach Kafka in
 * outbox order. A batch of unsent rows is sent and marked sent in the same transaction; a failed send
 * leaves them unsent for the next attempt. The transaction, its rows' locks and its pooled client last
 * as long as the send: `send` must give up in bounded time (the relay waits out a slow Kafka while it
 * runs, up to kafkajs's request timeout, and gives up 2 s into a stop).
 */
import type { Pool } from 'pg';
import type { AlertEvent } from '../../../shared/alert-event.js';
import { RELAY_LOCK } from './locks.js';
import { inTransaction } from './tx.js';

export interface OutboxMessage {
  key: string;
  alert: AlertEvent;
}

export interface OutboxStore {
  /**
   * Sends up to `limit` unsent alerts, oldest first, with `send`; returns how many were sent. A `send`
   * that throws leaves them unsent; it is waited for with the rows locked, so it must not wait forever.
   */
  relay(limit: number, send: (messages: OutboxMessage[]) => Promise<void>): Promise<number>;
  /** How many alerts wait to be sent. */
  unsent(): Promise<number>;
}

export class PgOutboxStore implements OutboxStore {
  constructor(private readonly pool: Pool) {}

  relay(limit: number, send: (messages: OutboxMessage[]) => Promise<void>): Promise<number> {
    return inTransaction(this.pool, async (client) => {
      // Not waited for: the replica holding it is sending, and this one polls again soon.
      const { rows: lock } = await client.query<{ held: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS held', [RELAY_LOCK]);
      if (!lock[0]?.held) return 0;
      const { rows } = await client.query<{ alert_id: string; message_key: string; payload: AlertEvent }>(
        'SELECT alert_id, message_key, payload FROM alert_outbox WHERE sent_at IS NULL ORDER BY seq LIMIT $1 FOR UPDATE',
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
