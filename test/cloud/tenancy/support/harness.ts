/**
 * Starts tenancy's app in-process on 127.0.0.1 port 0, against its own fresh PostgreSQL database
 * (migrated by the real runner), and talks to it the way the mesh and claims-gateway do.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { request } from 'undici';
import { encodeClaims, type MembershipClaim } from '../../../../shared/claims.js';
import { sign } from '../../../../shared/hmac.js';
import { silentLogger, type Logger } from '../../../../shared/logger.js';
import { createTenancyApp } from '../../../../cloud/tenancy/app.js';
import { runMigrations } from '../../../../shared/pg-migrations.js';
import { PgTenancyStore } from '../../../../cloud/tenancy/pg-store.js';
import { serve } from '../../../support/http.js';
import { freshPgDatabase } from '../../../support/stack.js';

export const TENANCY_MIGRATIONS = fileURLToPath(new URL('../../../../cloud/tenancy/migrations/', import.meta.url));

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: unknown;
}

export interface CallOptions {
  /** The caller: an account id and its memberships, sent as x-gateway-claims. */
  as?: { sub: string; memberships?: MembershipClaim[] };
  body?: unknown;
  headers?: Record<string, string>;
}

export interface TenancyUnderTest {
  url: string;
  databaseUrl: string;
  pool: pg.Pool;
  store: PgTenancyStore;
  /** The current signing secret (first of the ring). */
  secret: string;
  call(method: string, path: string, options?: CallOptions): Promise<Answer>;
  /** Calls an internal route, signing the exact body bytes (or empty bytes) with `secret`. */
  signed(method: string, path: string, body?: string, secret?: string): Promise<Answer>;
}

export const newAccount = (): string => randomUUID();

/** A fresh PostgreSQL database with tenancy's schema, and a pool on it closed at teardown. */
export async function migratedPool(t: Teardown, max = 20): Promise<{ pool: pg.Pool; databaseUrl: string }> {
  const databaseUrl = await freshPgDatabase(t);
  const pool = new pg.Pool({ connectionString: databaseUrl, max });
  // The database is dropped with FORCE at teardown; its idle connections then fail harmlessly.
  pool.on('error', () => undefined);
  t.teardown(() => pool.end());
  await runMigrations(pool, 'tenancy', TENANCY_MIGRATIONS);
  return { pool, databaseUrl };
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

export interface StartTenancyOptions {
  keys?: string[];
  logger?: Logger;
  pool?: pg.Pool;
  databaseUrl?: string;
}

export async function startTenancy(t: Teardown, options: StartTenancyOptions = {}): Promise<TenancyUnderTest> {
  const { pool, databaseUrl } = options.pool && options.databaseUrl ? { pool: options.pool, databaseUrl: options.databaseUrl } : await migratedPool(t);
  const keys = options.keys ?? [`secret-${randomUUID()}`];
  const secret = keys[0] ?? '';
  const store = new PgTenancyStore(pool);
  const app = createTenancyApp({ store, keys, logger: options.logger ?? silentLogger() });
  const { url } = await serve(t, app);

  const call = async (method: string, path: string, opts: CallOptions = {}): Promise<Answer> => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.as) headers['x-gateway-claims'] = encodeClaims({ sub: opts.as.sub, memberships: opts.as.memberships ?? [] });
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    return answer(await request(`${url}${path}`, { method: method as 'GET', headers, body }));
  };

  const signed = async (method: string, path: string, body?: string, key: string = secret): Promise<Answer> => {
    const headers: Record<string, string> = { 'x-signature': sign(body ?? '', key) };
    if (body !== undefined) headers['content-type'] = 'application/json';
    return answer(await request(`${url}${path}`, { method: method as 'GET', headers, body }));
  };

  return { url, databaseUrl, pool, store, secret, call, signed };
}

/** Creates a domain through the API as `admin`; returns its wire JSON. */
export async function createDomain(
  app: TenancyUnderTest,
  admin: string,
  body: { name: string; displayName?: string; joinPolicy?: string; isPublic?: boolean },
): Promise<Record<string, unknown>> {
  const created = await app.call('POST', '/domains', { as: { sub: admin }, body: { displayName: body.name, ...body } });
  if (created.status !== 201) throw new Error(`creating ${body.name}: ${created.status} ${created.text}`);
  return created.json as Record<string, unknown>;
}

/** A domain name no other test run uses. */
export function uniqueDomain(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

export interface PlanNode {
  type: string;
  relation?: string;
  index?: string;
}

/** Every node of an `EXPLAIN (FORMAT JSON)` plan, flattened. */
export async function planOf(pool: pg.Pool, sql: string, values: unknown[] = []): Promise<PlanNode[]> {
  const result = await pool.query<{ 'QUERY PLAN': [{ Plan: Record<string, unknown> }] }>(`EXPLAIN (FORMAT JSON) ${sql}`, values);
  const nodes: PlanNode[] = [];
  const walk = (node: Record<string, unknown>) => {
    const entry: PlanNode = { type: String(node['Node Type']) };
    if (typeof node['Relation Name'] === 'string') entry.relation = node['Relation Name'];
    if (typeof node['Index Name'] === 'string') entry.index = node['Index Name'];
    nodes.push(entry);
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
  };
  const root = result.rows[0]?.['QUERY PLAN'][0]?.Plan;
  if (root) walk(root);
  return nodes;
}
