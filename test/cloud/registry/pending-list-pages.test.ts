/**
 * The pending list is read and written a page at a time (signup is open, so the list is unbounded),
 * yet answers exactly what one whole read answered: every organization still provisioning, oldest
 * first, as one JSON array. A failure after the first page must not pass for a complete list.
 */
import { get } from 'node:http';
import t from 'tap';
import { request } from 'undici';
import { sign } from '../../../shared/hmac.js';
import type { PendingCursor, PendingPage, RegistryStore } from '../../../cloud/registry/model.js';
import { bodyAsFarAsItCame, readWithConnectionLost } from '../../support/broken-listing.js';
import { startRegistry, type RegistryUnderTest } from './support/harness.js';

const PAGE_SIZE = 3;

interface PageRead {
  after?: PendingCursor;
  limit: number;
}

/**
 * The real store, with each page read recorded; `read` may replace the n-th read (1-based) with its
 * own use of the real store and database.
 */
function recording(reads: PageRead[], read?: (store: RegistryStore, page: PageRead, n: number) => Promise<PendingPage> | undefined) {
  return (store: RegistryStore): RegistryStore => ({
    createOrganization: (signup) => store.createOrganization(signup),
    applyEvent: (id, event) => store.applyEvent(id, event),
    pendingOrganizations: (page: PageRead): Promise<PendingPage> => {
      reads.push({ ...page });
      return read?.(store, page, reads.length) ?? store.pendingOrganizations(page);
    },
  });
}

/** The pending list as one query reads it, in the wire's shape: what the route answered before paging. */
async function pendingAsOneRead(app: RegistryUnderTest): Promise<string> {
  const { rows } = await app.pool.query(`SELECT * FROM organizations WHERE status = 'provisioning' ORDER BY created_at, id`);
  return JSON.stringify(
    rows.map((r) => ({
      ID: r.id,
      Name: r.name,
      DisplayName: r.display_name,
      Tier: r.tier,
      Host: r.host,
      IdentityMode: r.identity_mode,
      Issuer: r.issuer,
      LicenseStatus: r.license_status,
      Status: r.status,
      StatusDetail: r.status_detail,
      created_at: (r.created_at as Date).toISOString(),
    })),
  );
}

/**
 * Organizations whose created_at differ by microseconds inside one millisecond (a Date would make
 * them equal), several sharing one created_at (ordered by id), some no longer pending, and text that
 * JSON escapes.
 */
async function seed(app: RegistryUnderTest, count: number): Promise<void> {
  await app.pool.query(
    `INSERT INTO organizations (name, display_name, tier, issuer, created_at)
     SELECT 'org-' || n, 'Quote " backslash \\ tab ' || chr(9) || n, 'pooled', 'https://idp.test/' || n,
            timestamptz '2024-05-01 12:00:00.000000+00' + (n / 4) * interval '1 microsecond'
     FROM generate_series(1, $1) AS n`,
    [count],
  );
  await app.pool.query(`UPDATE organizations SET status = 'ready' WHERE name IN ('org-2', 'org-7')`);
}

t.test('read in pages, the pending list is the whole list, oldest first, in the same JSON', async (t) => {
  for (const count of [0, 2, 8, 11, 20]) {
    const reads: PageRead[] = [];
    const app = await startRegistry(t, { pendingPageSize: PAGE_SIZE, wrapStore: recording(reads) });
    await seed(app, count);
    const pending = await app.signed('GET', '/internal/organizations/pending');
    t.equal(pending.status, 200, `${count} rows: 200`);
    t.match(pending.headers['content-type'], /^application\/json; charset=utf-8$/);
    t.equal(pending.text, await pendingAsOneRead(app), `${count} rows: the same bytes as one whole read`);
    const listed = (pending.json as unknown[]).length;
    t.equal(reads.length, Math.floor(listed / PAGE_SIZE) + 1, `${count} rows: ${listed} pending read in pages of ${PAGE_SIZE}`);
    t.ok(reads.every((read) => read.limit === PAGE_SIZE), 'every read asks for one page');
  }
});

t.test('a wrong signature is refused before the list is read', async (t) => {
  const reads: PageRead[] = [];
  const app = await startRegistry(t, { pendingPageSize: PAGE_SIZE, wrapStore: recording(reads) });
  await seed(app, 8);
  const refused = await app.signed('GET', '/internal/organizations/pending', undefined, 'stranger');
  t.equal(refused.status, 403);
  t.equal(refused.text, 'invalid signature');
  t.equal(reads.length, 0, 'nothing read');
});

t.test('a database failure after the first page breaks the answer instead of closing the array', async (t) => {
  const reads: PageRead[] = [];
  const failures: unknown[] = [];
  const app = await startRegistry(t, {
    pendingPageSize: PAGE_SIZE,
    wrapStore: (store, pool) =>
      recording(reads, (real, page, n) => {
        if (n !== 2) return undefined;
        const read = readWithConnectionLost(pool, 'organizations', () => real.pendingOrganizations(page));
        read.catch((err: unknown) => failures.push(err));
        return read;
      })(store),
  });
  await seed(app, 8);
  const response = await request(`${app.url}/internal/organizations/pending`, { headers: { 'x-signature': sign('', app.secret) } });
  t.equal(response.statusCode, 200, 'the first page went out');
  const { received, broken } = await bodyAsFarAsItCame(response.body);
  t.ok(broken instanceof Error, 'the client sees the answer broken off, not ended');
  t.equal(failures.length, 1, 'the second page failed in PostgreSQL');
  t.match(String((failures[0] as Error | undefined)?.message), /terminat/, 'because its connection was terminated');
  t.ok(received.startsWith('[{"ID":'), 'the first page was sent');
  t.throws(() => JSON.parse(received), 'what arrived is not a JSON array');
  t.equal(reads.length, 2, 'nothing read after the failure');
});

t.test('when the provisioner goes away, reading stops', async (t) => {
  const reads: PageRead[] = [];
  let secondReadDone: () => void = () => undefined;
  const secondRead = new Promise<void>((resolve) => {
    secondReadDone = resolve;
  });
  const connections = (): Promise<number> =>
    new Promise((resolve, reject) => app.server.getConnections((err, count) => (err ? reject(err) : resolve(count))));
  const app = await startRegistry(t, {
    pendingPageSize: 1,
    // The second read starts once the server has seen the client's connection close.
    wrapStore: recording(reads, (store, page, n) => {
      if (n !== 2) return undefined;
      return (async () => {
        while ((await connections()) > 0) await new Promise((resolve) => setTimeout(resolve, 10));
        const read = await store.pendingOrganizations(page);
        secondReadDone();
        return read;
      })();
    }),
  });
  await seed(app, 8);
  await new Promise<void>((resolve, reject) => {
    const req = get(`${app.url}/internal/organizations/pending`, { headers: { 'x-signature': sign('', app.secret) } }, (res) => {
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
  });
  await secondRead;
  // A later poll needs the network; a third read of the abandoned answer would have come before it.
  const later = await app.signed('GET', '/internal/organizations/pending');
  t.equal((later.json as unknown[]).length, 6, 'a later poll gets the whole list');
  t.equal(reads.length, 2 + 7, 'the abandoned answer read two pages; the later poll its six and the empty one');
});
