/**
 * GET /domains without `limit` (the seed's whole listing), and a domain's subdomains, are read and
 * written a page at a time: any account may make public domains without limit, so built whole the
 * listing held every one of them in memory and, past the longest string V8 can hold, failed every call.
 * It still answers exactly what one whole read answered, and a failure after the first page must not
 * pass for a complete list.
 */
import { request as httpRequest } from 'node:http';
import type pg from 'pg';
import t from 'tap';
import { request } from 'undici';
import { encodeClaims } from '../../../shared/claims.js';
import { silentLogger, type Logger } from '../../../shared/logger.js';
import { createTenancyApp } from '../../../cloud/tenancy/app.js';
import type { ListedDomain, TenancyStore } from '../../../cloud/tenancy/model.js';
import { PgTenancyStore } from '../../../cloud/tenancy/pg-store.js';
import { MAX_PAGE_SIZE } from '../../../cloud/tenancy/routes/paging.js';
import { listedDomainJson } from '../../../cloud/tenancy/wire.js';
import { capturedLogger } from '../../support/captured-logger.js';
import { serve } from '../../support/http.js';
import { bodyAsFarAsItCame, readWithConnectionLost } from '../../support/broken-listing.js';
import { migratedPool, newAccount } from './support/harness.js';

type PageRead = Parameters<TenancyStore['listPublicDomains']>[0];
/**
 * Replaces the n-th read (1-based) of public domains with its own use of the real store and database,
 * or leaves it to the store (undefined).
 */
type ReadReplacement = (real: { store: TenancyStore; pool: pg.Pool }, page: PageRead, n: number) => Promise<ListedDomain[]> | undefined;

/** The real store, with every read of public domains recorded. */
function recording(store: TenancyStore, pool: pg.Pool, reads: PageRead[], subdomainReads: PageRead[], replace?: ReadReplacement): TenancyStore {
  return new Proxy(store, {
    get(target, key) {
      if (key === 'listSubdomains') {
        return (parent: string, page: PageRead, visible: 'all' | 'public') => {
          subdomainReads.push({ ...page });
          return target.listSubdomains(parent, page, visible);
        };
      }
      if (key === 'listPublicDomains') {
        return (page: PageRead) => {
          reads.push({ ...page });
          return replace?.({ store: target, pool }, page, reads.length) ?? target.listPublicDomains(page);
        };
      }
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

interface Listing {
  url: string;
  pool: pg.Pool;
  /** The store without recording, for what one whole read answers. */
  store: TenancyStore;
  reads: PageRead[];
  /** Every read of a domain's subdomains. */
  subdomainReads: PageRead[];
  connections(): Promise<number>;
}

/** Tenancy's app on its own database, its store recording reads; `logger` is the app's. */
async function startListing(t: { teardown(fn: () => unknown): void }, options: { replace?: ReadReplacement; logger?: Logger } = {}): Promise<Listing> {
  const { pool } = await migratedPool(t);
  const store = new PgTenancyStore(pool);
  const reads: PageRead[] = [];
  const subdomainReads: PageRead[] = [];
  const recorded = recording(store, pool, reads, subdomainReads, options.replace);
  const app = createTenancyApp({ store: recorded, keys: [`secret-${newAccount()}`], logger: options.logger ?? silentLogger() });
  const { url, server } = await serve(t, app);
  const connections = (): Promise<number> =>
    new Promise((resolve, reject) => server.getConnections((err, count) => (err ? reject(err) : resolve(count))));
  return { url, pool, store, reads, subdomainReads, connections };
}

const claims = { 'x-gateway-claims': encodeClaims({ sub: newAccount(), memberships: [] }) };

async function get(listing: Listing, path: string): Promise<{ status: number; contentType: unknown; link: unknown; text: string }> {
  const response = await request(`${listing.url}${path}`, { headers: claims });
  const text = await response.body.text();
  return { status: response.statusCode, contentType: response.headers['content-type'], link: response.headers.link, text };
}

/**
 * Domains n = from…to: names that sort differently bytewise and in PostgreSQL's collation (hyphens,
 * unpadded numbers), display names of the longest allowed length with text JSON escapes, every fifth
 * one private, every fourth with members, some under a parent.
 */
async function seed(pool: pg.Pool, from: number, to: number): Promise<void> {
  await pool.query(
    `INSERT INTO domains (name, display_name, join_policy, is_public)
     SELECT CASE WHEN n % 2 = 0 THEN 'd-' || n ELSE 'd' || n END,
            left(n || ' Quote " backslash \\ tab ' || chr(9) || ' é ' || repeat('x', 256), 256),
            CASE WHEN n % 3 = 0 THEN 'open-via-idp' ELSE 'invite-only' END,
            n % 5 <> 0
     FROM generate_series($1::int, $2::int) AS n`,
    [from, to],
  );
  await pool.query(
    `INSERT INTO memberships (account_id, domain_id, role)
     SELECT gen_random_uuid(), d.id, 'member' FROM domains d, generate_series(1, 2)
     WHERE d.name ~ '^d-?[0-9]*[048]$' AND NOT EXISTS (SELECT 1 FROM memberships m WHERE m.domain_id = d.id)`,
  );
  await pool.query(`UPDATE domains SET parent_id = (SELECT id FROM domains WHERE name = 'd1') WHERE name ~ '^d[0-9]*7$'`);
}

/** The public domains' names as PostgreSQL orders them. */
async function publicNames(pool: pg.Pool): Promise<string[]> {
  const { rows } = await pool.query<{ name: string }>('SELECT name FROM domains WHERE is_public ORDER BY name');
  return rows.map((row) => row.name);
}

/** What the route answered before it paged: one read of the whole listing, serialised whole. */
async function asOneRead(store: TenancyStore, after?: string): Promise<string> {
  return JSON.stringify((await store.listPublicDomains({ after, limit: 1_000_000 })).map(listedDomainJson));
}

/** The listing as a client following `Link: rel="next"` from the first page of `limit` reads it. */
async function followingPages(listing: Listing, limit: number): Promise<string> {
  const all: unknown[] = [];
  let next: string | undefined = `/domains?limit=${limit}`;
  while (next !== undefined) {
    const page = await get(listing, next);
    all.push(...(JSON.parse(page.text) as unknown[]));
    next = typeof page.link === 'string' ? /^<([^>]+)>; rel="next"$/.exec(page.link)?.[1] : undefined;
  }
  return JSON.stringify(all);
}

/** How many reads of MAX_PAGE_SIZE a listing of `count` takes: the last one short (maybe empty). */
const readsFor = (count: number): number => Math.floor(count / MAX_PAGE_SIZE) + 1;

t.test('the whole listing is read a page at a time and answers the same JSON as one whole read', async (t) => {
  const listing = await startListing(t);
  let seeded = 0;
  // Empty; exactly one page of public domains (the second read comes back empty); several and a short one.
  for (const until of [0, Math.round(MAX_PAGE_SIZE * 1.25), 3200]) {
    if (until > seeded) await seed(listing.pool, seeded + 1, until);
    seeded = until;
    const names = await publicNames(listing.pool);
    listing.reads.length = 0;
    const whole = await get(listing, '/domains');
    t.equal(whole.status, 200, `${names.length} public: 200`);
    t.equal(whole.contentType, 'application/json; charset=utf-8');
    t.equal(whole.link, undefined, 'no next page');
    t.equal(whole.text, await asOneRead(listing.store), `${names.length} public: the same bytes as one whole read`);
    t.same((JSON.parse(whole.text) as { name: string }[]).map((d) => d.name), names, 'every public domain, in order');
    t.equal(listing.reads.length, readsFor(names.length), `${names.length} public: read in pages of ${MAX_PAGE_SIZE}`);
    t.ok(listing.reads.every((read) => read.limit === MAX_PAGE_SIZE), 'every read asks for one page');
    t.same(
      listing.reads.map((read) => read.after),
      listing.reads.map((_, i) => (i === 0 ? undefined : names[i * MAX_PAGE_SIZE - 1])),
      'each read starts after the last domain of the one before',
    );
  }
  t.ok(seeded / MAX_PAGE_SIZE > 4 && (await publicNames(listing.pool)).length % MAX_PAGE_SIZE !== 0, 'the last case spans several pages and a short one');
  const whole = await get(listing, '/domains');
  t.equal(whole.text, await followingPages(listing, MAX_PAGE_SIZE), 'the same as the pages of the paged form, concatenated');
  t.equal(whole.text, await followingPages(listing, 123), 'whatever their size');
});

t.test('`after` alone: everything after it, read a page at a time', async (t) => {
  const listing = await startListing(t);
  await seed(listing.pool, 1, 2000);
  const names = await publicNames(listing.pool);
  const after = names[250] ?? '';
  listing.reads.length = 0;
  const rest = await get(listing, `/domains?after=${after}`);
  t.equal(rest.status, 200, '200');
  t.equal(rest.text, await asOneRead(listing.store, after), 'the same bytes as one whole read after it');
  t.equal((JSON.parse(rest.text) as unknown[]).length, names.length - 251, 'every public domain after it');
  t.equal(listing.reads.length, readsFor(names.length - 251), `read in pages of ${MAX_PAGE_SIZE}`);
  t.equal(listing.reads[0]?.after, after, 'the first read starts after it');
  t.ok(listing.reads.every((read) => read.limit === MAX_PAGE_SIZE), 'every read asks for one page');
});

t.test('the paged form is one read of the page asked for', async (t) => {
  const listing = await startListing(t);
  await seed(listing.pool, 1, 1000);
  const names = await publicNames(listing.pool);
  listing.reads.length = 0;
  const page = await get(listing, `/domains?after=${names[9] ?? ''}&limit=5`);
  t.same((JSON.parse(page.text) as { name: string }[]).map((d) => d.name), names.slice(10, 15));
  t.equal(page.link, `</domains?after=${names[14] ?? ''}&limit=5>; rel="next"`);
  t.same(listing.reads, [{ after: names[9], limit: 5 }]);
});

t.test('a database failure after the first page breaks the answer off instead of closing the array', async (t) => {
  const failures: unknown[] = [];
  const { logger, lines, text } = capturedLogger('tenancy-test');
  const listing = await startListing(t, {
    logger,
    replace: (real, page, n) => {
      if (n !== 2) return undefined;
      const read = readWithConnectionLost(real.pool, 'domains', () => real.store.listPublicDomains(page));
      read.catch((err: unknown) => failures.push(err));
      return read;
    },
  });
  await seed(listing.pool, 1, 1500);
  const response = await request(`${listing.url}/domains`, { headers: claims });
  t.equal(response.statusCode, 200, 'the first page went out');
  const { received, broken } = await bodyAsFarAsItCame(response.body);
  t.ok(broken instanceof Error, 'the client sees the answer broken off, not ended');
  t.equal(failures.length, 1, 'the second page failed in PostgreSQL');
  t.match(String((failures[0] as Error | undefined)?.message), /terminat/, 'because its connection was terminated');
  t.ok(received.startsWith('[{"id":'), 'the first page was sent');
  t.throws(() => JSON.parse(received), 'what arrived is not a JSON array');
  t.equal(listing.reads.length, 2, 'nothing read after the failure');
  t.match(lines, [{ level: 50, msg: /public domains.*connection closed/, error: String }], 'the failure is logged once');
  t.equal(lines.length, 1, 'and nothing else');
  t.notMatch(text.join(''), /SELECT|FROM domains/, 'without SQL text');
});

t.test('when the client goes away, reading stops', async (t) => {
  let secondReadStarted: () => void = () => undefined;
  const secondReadStart = new Promise<void>((resolve) => {
    secondReadStarted = resolve;
  });
  let secondReadDone: () => void = () => undefined;
  const secondRead = new Promise<void>((resolve) => {
    secondReadDone = resolve;
  });
  let connections: () => Promise<number> = () => Promise.resolve(0);
  const listing = await startListing(t, {
    // The second read starts once the server has seen the client's connection close.
    replace: (real, page, n) => {
      if (n !== 2) return undefined;
      secondReadStarted();
      return (async () => {
        while ((await connections()) > 0) await new Promise((resolve) => setTimeout(resolve, 10));
        const read = await real.store.listPublicDomains(page);
        secondReadDone();
        return read;
      })();
    },
  });
  connections = listing.connections;
  // Three full pages: without stopping, a third read would follow the second at once.
  await seed(listing.pool, 1, 2000);
  const count = (await publicNames(listing.pool)).length;
  t.ok(count > 2 * MAX_PAGE_SIZE, 'more than two pages');
  const req = httpRequest(`${listing.url}/domains`, { headers: claims });
  req.on('error', (err) => (req.destroyed ? undefined : t.error(err)));
  req.end();
  await secondReadStart;
  req.destroy();
  await secondRead;
  // A later call needs the network; a third read of the abandoned answer would have come before it.
  const later = await get(listing, '/domains');
  t.equal((JSON.parse(later.text) as unknown[]).length, count, 'a later call gets the whole listing');
  t.equal(listing.reads.length, 2 + readsFor(count), 'the abandoned answer read two pages; the later call all of its own');
});

t.test('a domain\'s subdomains without `limit` are read a page at a time too, and answer what its pages answer', async (t) => {
  const listing = await startListing(t);
  const count = Math.round(MAX_PAGE_SIZE * 2.5);
  await listing.pool.query(`INSERT INTO domains (name, display_name, join_policy, is_public) VALUES ('campus', 'Campus', 'invite-only', true)`);
  await listing.pool.query(
    `INSERT INTO domains (name, display_name, join_policy, is_public, parent_id)
     SELECT 'campus-' || n, 'Wing ' || n, 'invite-only', n % 7 <> 0, (SELECT id FROM domains WHERE name = 'campus')
     FROM generate_series(1, $1::int) AS n`,
    [count],
  );
  const whole = await get(listing, '/domains/campus/subdomains');
  t.equal(whole.status, 200);
  t.same(
    listing.subdomainReads.map((read) => read.limit),
    Array.from({ length: readsFor(count - Math.floor(count / 7)) }, () => MAX_PAGE_SIZE),
    'read in pages of 500, never whole',
  );
  const pages: unknown[] = [];
  let next: string | undefined = '/domains/campus/subdomains?limit=200';
  while (next !== undefined) {
    const page = await get(listing, next);
    pages.push(...(JSON.parse(page.text) as unknown[]));
    next = typeof page.link === 'string' ? /^<([^>]+)>; rel="next"$/.exec(page.link)?.[1] : undefined;
  }
  t.equal(whole.text, JSON.stringify(pages), 'the same JSON as its pages, joined');
  t.equal((JSON.parse(whole.text) as unknown[]).length, count - Math.floor(count / 7), 'every public subdomain, once');
  t.equal((await get(listing, '/domains/nowhere/subdomains')).status, 404, 'an unknown parent is still a 404');
});
