/**
 * FerretDB's own PostgreSQL database, to slow a chat write down for real: a transaction holding a
 * conversation table's rows makes FerretDB's update of that table wait, as a loaded database would.
 */
import pg from 'pg';
import type { Db } from 'mongodb';
import { stackEnv, type Teardown } from '../../../support/stack.js';
import { conversationsOf } from './harness.js';

/** The database FerretDB keeps its data in (`tools/stack`), beside the stack's own. */
export function ferretBackendUrl(): string {
  const url = new URL(stackEnv().DATABASE_URL);
  url.pathname = '/ferretdb';
  return url.toString();
}

/** The PostgreSQL table FerretDB keeps `collection` of `database` in, as a quoted `schema.table`. */
export async function tableOf(client: pg.Client, database: string, collection: string): Promise<string> {
  const { rows } = await client.query<{ table: string }>(
    `SELECT _jsonb->>'table' AS table FROM ${pg.escapeIdentifier(database)}._ferretdb_database_metadata WHERE _jsonb->>'_id' = $1`,
    [collection],
  );
  const table = rows[0]?.table;
  if (!table) throw new Error(`FerretDB has no table for ${database}.${collection}`);
  return `${pg.escapeIdentifier(database)}.${pg.escapeIdentifier(table)}`;
}

/**
 * Waits until a FerretDB session waits for a lock on `table` (a bounded poll, not a timing). `client`
 * must not be in a transaction: one sees pg_stat_activity as it was when it began.
 */
export async function untilWriteWaitsOn(client: pg.Client, table: string): Promise<void> {
  const name = table.slice(table.lastIndexOf('.') + 1).replaceAll('"', '');
  for (let i = 0; i < 500; i++) {
    const { rows } = await client.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND position($1 in query) > 0",
      [name],
    );
    if ((rows[0]?.n ?? 0) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no write ever waited on ${table}`);
}

/**
 * Holds the rows of `owner`'s conversation table in `db` in a transaction of FerretDB's own database, so
 * the next update of them (an append, a rename) waits until `release`. `untilWriteWaits` resolves once
 * one does. The two clients are closed at teardown.
 */
export async function holdConversationRows(t: Teardown, db: Db, owner = 'ana'): Promise<{ untilWriteWaits(): Promise<void>; release(): Promise<unknown> }> {
  const holder = new pg.Client({ connectionString: ferretBackendUrl() });
  const watcher = new pg.Client({ connectionString: ferretBackendUrl() });
  await Promise.all([holder.connect(), watcher.connect()]);
  t.teardown(() => Promise.all([holder.end(), watcher.end()]));
  const table = await tableOf(holder, db.databaseName, conversationsOf(db, owner).collectionName);
  await holder.query('BEGIN');
  await holder.query(`SELECT 1 FROM ${table} FOR UPDATE`);
  return { untilWriteWaits: () => untilWriteWaitsOn(watcher, table), release: () => holder.query('COMMIT') };
}
