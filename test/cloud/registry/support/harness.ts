/**
 * Starts registry's app in-process on 127.0.0.1 port 0 against its own fresh, migrated PostgreSQL
 * database, and talks to it the way a signup form and the provisioner do.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { request } from 'undici';
import { sign } from '../../../../shared/hmac.js';
import { silentLogger } from '../../../../shared/logger.js';
import { createRegistryApp } from '../../../../cloud/registry/app.js';
import type { RegistryStore } from '../../../../cloud/registry/model.js';
import { PgRegistryStore } from '../../../../cloud/registry/pg-store.js';
import { runMigrations } from '../../../../shared/pg-migrations.js';
import { serve } from '../../../support/http.js';
import { freshPgDatabase } from '../../../support/stack.js';

export const REGISTRY_MIGRATIONS = fileURLToPath(new URL('../../../../cloud/registry/migrations/', import.meta.url));

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: unknown;
}

export interface RegistryUnderTest {
  url: string;
  server: Server;
  pool: pg.Pool;
  secret: string;
  /** POST /organizations with a JSON (or raw string) body. */
  signup(body: unknown): Promise<Answer>;
  /** Calls an internal route, signing the exact body bytes (or empty bytes). */
  signed(method: string, path: string, body?: string, secret?: string): Promise<Answer>;
  rowCount(): Promise<number>;
}

async function answer(response: Awaited<ReturnType<typeof request>>): Promise<Answer> {
  const text = await response.body.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.statusCode, headers: response.headers, text, json };
}

export interface RegistryOptions {
  keys?: string[];
  /** Organizations per page of the pending list (the app's default otherwise). */
  pendingPageSize?: number;
  /** Wraps the real PostgreSQL store, to act on the database between the app's calls. */
  wrapStore?: (store: RegistryStore, pool: pg.Pool) => RegistryStore;
}

export async function startRegistry(t: Teardown, options: RegistryOptions = {}): Promise<RegistryUnderTest> {
  const pool = new pg.Pool({ connectionString: await freshPgDatabase(t), max: 10 });
  pool.on('error', () => undefined);
  t.teardown(() => pool.end());
  await runMigrations(pool, 'registry', REGISTRY_MIGRATIONS);
  const keys = options.keys ?? [`secret-${randomUUID()}`];
  const secret = keys[0] ?? '';
  const pgStore = new PgRegistryStore(pool);
  const store = options.wrapStore ? options.wrapStore(pgStore, pool) : pgStore;
  const { url, server } = await serve(t, createRegistryApp({ store, keys, logger: silentLogger(), pendingPageSize: options.pendingPageSize }));
  return {
    url,
    server,
    pool,
    secret,
    signup: async (body) =>
      answer(
        await request(`${url}/organizations`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: typeof body === 'string' ? body : JSON.stringify(body),
        }),
      ),
    signed: async (method, path, body, key = secret) => {
      const headers: Record<string, string> = { 'x-signature': sign(body ?? '', key) };
      if (body !== undefined) headers['content-type'] = 'application/json';
      return answer(await request(`${url}${path}`, { method: method as 'GET', headers, body }));
    },
    rowCount: async () => (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM organizations')).rows[0]?.n ?? -1,
  };
}
