/**
 * A unique PostgreSQL database per test, dropped at teardown, on the shared stack's server.
 * (Stands in for test/support/stack.ts freshPgDatabase, with the same shape, until that lands.)
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** The stack's PostgreSQL (tools/stack), or DATABASE_URL when set. */
export function stackDatabaseUrl(): string {
  return process.env.DATABASE_URL ?? 'postgres://lintel@127.0.0.1:55432/lintel';
}

/** Creates a database no other test uses; returns its URL. Dropped (connections and all) at teardown. */
export async function freshPgDatabase(t: Teardown): Promise<string> {
  const adminUrl = stackDatabaseUrl();
  const name = `t_identity_${process.pid}_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  t.teardown(async () => {
    const dropper = new pg.Client({ connectionString: adminUrl });
    await dropper.connect();
    try {
      await dropper.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await dropper.end();
    }
  });
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
