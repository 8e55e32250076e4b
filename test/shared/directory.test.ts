import t, { type Test } from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createBuildingDirectory, DirectoryError } from '../../shared/directory.js';
import { encodeClaims } from '../../shared/claims.js';
import { listen, closeServer } from '../../shared/lifecycle.js';

type Route = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * A building directory that answers only the buildings it was set up with, and records every call. A
 * list of routes answers the n-th call with the n-th route, and refuses any call past the list.
 */
async function fakeDirectory(t: Test, routes: Record<string, Route | Route[]>) {
  const calls: { url: string; claims: string | undefined }[] = [];
  const unexpected: string[] = [];
  const server = createServer((req, res) => {
    calls.push({ url: req.url ?? '', claims: req.headers['x-gateway-claims'] as string | undefined });
    const routed = req.method === 'GET' ? routes[req.url ?? ''] : undefined;
    const route = Array.isArray(routed) ? routed[calls.filter((c) => c.url === req.url).length - 1] : routed;
    if (!route) {
      unexpected.push(req.url ?? '');
      res.writeHead(500).end('unexpected call');
      return;
    }
    route(req, res);
  });
  // Registered before the close, so it runs after it: a teardown that throws skips those still to run,
  // and a server left open would keep the file running until tap's timeout.
  t.teardown(() => {
    if (unexpected.length > 0) throw new Error(`the directory got calls it was not set up for: ${unexpected.join(', ')}`);
  });
  const port = await listen(server, 0, '127.0.0.1');
  t.teardown(async () => {
    // Drops requests a test left unanswered on purpose, so the close does not wait for them.
    const closing = closeServer(server);
    server.closeAllConnections();
    await closing;
  });
  return { url: `http://127.0.0.1:${port}`, calls, unexpected };
}

const claims = encodeClaims({ sub: 'u1', accountName: 'ana', memberships: [{ domainName: 'acme', role: 'member' }] });
const json = (body: unknown): Route => (_req, res) => { res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body)); };
const failing = (status: number): Route => (_req, res) => { res.writeHead(status).end('failing on purpose'); };

/** A route whose answer waits until the test calls `release`; `arrived` settles once the call came in. */
function heldAnswer(answer: Route) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let arrive!: () => void;
  const arrived = new Promise<void>((resolve) => (arrive = resolve));
  const route: Route = (req, res) => {
    arrive();
    void released.then(() => answer(req, res));
  };
  return { route, arrived, release };
}

/** Every outcome of `calls`, so a test can assert on all of them even when some fail. */
async function outcomes(calls: Promise<string[]>[]): Promise<Array<{ domains: string[] } | { error: unknown }>> {
  const settled = await Promise.allSettled(calls);
  return settled.map((s) => (s.status === 'fulfilled' ? { domains: s.value } : { error: s.reason }));
}

t.test('looks up a building, forwarding the claims, and caches per building for the TTL', async (t) => {
  const fake = await fakeDirectory(t, { '/domain/b1': json(['acme', 'globex', 'acme']), '/domain/b%2F2': json({ domains: ['x'] }) });
  let now = 1_000_000;
  const dir = createBuildingDirectory({ baseUrl: `${fake.url}/`, cacheTtlMs: 60_000, clock: () => now });
  t.same(await dir.domainsOf('b1', claims), ['acme', 'globex']);
  t.equal(fake.calls[0]?.claims, claims, 'claims forwarded verbatim');
  now += 59_999;
  t.same(await dir.domainsOf('b1', claims), ['acme', 'globex']);
  t.equal(fake.calls.length, 1, 'served from the cache within the TTL');
  now += 2;
  await dir.domainsOf('b1', claims);
  t.equal(fake.calls.length, 2, 'looked up again after the TTL');
  t.same(await dir.domainsOf('b/2', claims), ['x'], 'ids are path-encoded; a {domains} body is accepted');
  const answer = await dir.domainsOf('b1', claims);
  answer.push('intruder');
  t.same(await dir.domainsOf('b1', claims), ['acme', 'globex'], 'a caller changing its answer does not change the cache');
  t.same(fake.unexpected, []);
});

t.test('an answer larger than any list of domains is malformed, and is not read to its end', async (t) => {
  const huge = JSON.stringify(Array.from({ length: 20_000 }, (_, i) => `domain-${i}`));
  const fake = await fakeDirectory(t, { '/domain/b1': (_req, res) => { res.writeHead(200, { 'content-type': 'application/json' }).end(huge); } });
  const dir = createBuildingDirectory({ baseUrl: fake.url, cacheTtlMs: 0 });
  t.ok(huge.length > 64 * 1024);
  await t.rejects(dir.domainsOf('b1', claims), { name: 'DirectoryError', code: 'bad_body', message: 'building directory answer is larger than 65536 bytes' });
});

t.test('empty and failed answers are never cached', async (t) => {
  let answer: unknown = [];
  let status = 200;
  const fake = await fakeDirectory(t, { '/domain/b1': (_req, res) => { res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(answer)); } });
  const dir = createBuildingDirectory({ baseUrl: fake.url, cacheTtlMs: 60_000 });
  t.same(await dir.domainsOf('b1', claims), []);
  answer = ['acme'];
  t.same(await dir.domainsOf('b1', claims), ['acme'], 'the empty answer was not cached');
  const dir2 = createBuildingDirectory({ baseUrl: fake.url, cacheTtlMs: 60_000 });
  status = 503;
  await t.rejects(dir2.domainsOf('b1', claims), { name: 'DirectoryError', code: 'bad_status', status: 503 });
  status = 200;
  t.same(await dir2.domainsOf('b1', claims), ['acme'], 'the failure was not cached');
});

t.test('with cacheEmpty, an empty answer is cached for the TTL too; a failure still is not', async (t) => {
  let answer: unknown = [];
  let status = 200;
  const fake = await fakeDirectory(t, { '/domain/b1': (_req, res) => { res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(answer)); } });
  let now = 1_000_000;
  const dir = createBuildingDirectory({ baseUrl: fake.url, cacheTtlMs: 60_000, cacheEmpty: true, clock: () => now });
  t.same(await dir.domainsOf('b1', claims), []);
  answer = ['acme'];
  now += 59_999;
  t.same(await dir.domainsOf('b1', claims), [], 'the empty answer is served from the cache');
  t.equal(fake.calls.length, 1);
  now += 1;
  status = 503;
  await t.rejects(dir.domainsOf('b1', claims), { name: 'DirectoryError', code: 'bad_status', status: 503 });
  status = 200;
  t.same(await dir.domainsOf('b1', claims), ['acme'], 'the failure was not cached');
  t.equal(fake.calls.length, 3);
  t.same(fake.unexpected, []);
});

t.test('typed errors: timeout, unreachable, bad body', async (t) => {
  const fake = await fakeDirectory(t, {
    '/domain/slow': () => { /* never answers */ },
    '/domain/html': (_req, res) => { res.writeHead(200).end('<html>'); },
    '/domain/obj': json({ nope: true }),
    '/domain/mixed': json(['a', 3]),
    '/domain/empty-name': json(['acme', '']),
    '/domain/blank-name': json({ domains: ['  '] }),
    '/domain/control-name': json(['ac\nme']),
    '/domain/cut': (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '64' }).write('["ac');
      setImmediate(() => res.socket?.destroy());
    },
    '/domain/stall': (_req, res) => { res.writeHead(200, { 'content-type': 'application/json', 'content-length': '64' }).write('["ac'); },
  });
  // Only the calls meant to time out use the short timeout: a busy machine can stall a process for
  // 200 ms, and an answer that merely came late must not pass for a timeout in the other checks.
  const impatient = createBuildingDirectory({ baseUrl: fake.url, cacheTtlMs: 0, timeoutMs: 200 });
  const dir = createBuildingDirectory({ baseUrl: fake.url, cacheTtlMs: 0, timeoutMs: 10_000 });
  const timeout = await impatient.domainsOf('slow', claims).catch((e: unknown) => e);
  t.ok(timeout instanceof DirectoryError);
  t.equal((timeout as DirectoryError).code, 'timeout');
  t.notMatch((timeout as Error).message, new RegExp(claims), 'no claims in the message');
  await t.rejects(dir.domainsOf('html', claims), { code: 'bad_body' });
  await t.rejects(dir.domainsOf('obj', claims), { code: 'bad_body' });
  await t.rejects(dir.domainsOf('mixed', claims), { code: 'bad_body' });
  for (const building of ['empty-name', 'blank-name', 'control-name']) {
    await t.rejects(dir.domainsOf(building, claims), { code: 'bad_body', message: 'building directory answer is not a list of domain names' }, `${building}: a domain that is no name`);
  }
  const cut = await dir.domainsOf('cut', claims).catch((e: unknown) => e);
  t.match(cut, { name: 'DirectoryError', code: 'unreachable' }, 'a connection cut mid-body is not called a timeout');
  await t.rejects(impatient.domainsOf('stall', claims), { code: 'timeout' }, 'the timeout also covers a body that stops coming');
  // Port 9 (discard): nothing listens there, and no test binds it, unlike a port freed here for the purpose.
  const gone = createBuildingDirectory({ baseUrl: 'http://127.0.0.1:9', cacheTtlMs: 0, timeoutMs: 10_000 });
  await t.rejects(gone.domainsOf('b1', claims), { code: 'unreachable' });
});

t.test('the timeout defaults to 2 s', async (t) => {
  const fake = await fakeDirectory(t, { '/domain/slow': () => { /* never answers */ } });
  const dir = createBuildingDirectory({ baseUrl: fake.url, cacheTtlMs: 0 });
  await t.rejects(dir.domainsOf('slow', claims), { name: 'DirectoryError', code: 'timeout', message: 'building directory did not answer within 2000 ms' });
});

t.test('the ids . and .. belong to no domain, and never reach the directory as /domain/ or /', async (t) => {
  const fake = await fakeDirectory(t, { '/domain/': json(['everyone']), '/': json(['everyone']) });
  const dir = createBuildingDirectory({ baseUrl: fake.url, cacheTtlMs: 0 });
  t.same(await dir.domainsOf('.', claims), []);
  t.same(await dir.domainsOf('..', claims), []);
  t.same(fake.calls, [], 'no call was made');
});

t.test('concurrent lookups of one building on a caching client share one request, and each caller gets its own copy', async (t) => {
  const held = heldAnswer(json(['acme', 'globex']));
  const fake = await fakeDirectory(t, { '/domain/b1': [held.route], '/domain/b2': [json(['initech'])] });
  const dir = createBuildingDirectory({ baseUrl: fake.url, cacheTtlMs: 60_000 });
  const early = Array.from({ length: 10 }, () => dir.domainsOf('b1', claims));
  const other = dir.domainsOf('b2', claims);
  await held.arrived;
  // Callers that come while the answer is on its way join it too, whatever claims they carry.
  const late = Array.from({ length: 10 }, (_, i) => dir.domainsOf('b1', encodeClaims({ sub: `u${i + 2}`, memberships: [] })));
  held.release();
  const results = await outcomes([...early, ...late]);
  t.same(results, Array(20).fill({ domains: ['acme', 'globex'] }), 'all 20 callers got the answer');
  t.equal(fake.calls.filter((c) => c.url === '/domain/b1').length, 1, 'one directory request for 20 concurrent callers');
  t.equal(fake.calls[0]?.claims, claims, 'the request carries the claims of the caller that made it');
  t.same(await other, ['initech'], 'another building is a lookup of its own');
  const answers = results.map((r) => (r as { domains: string[] }).domains);
  t.equal(new Set(answers).size, 20, 'every caller got its own array');
  answers[0]?.push('intruder');
  t.same(await dir.domainsOf('b1', claims), ['acme', 'globex'], 'a caller changing its answer changes neither the others nor the cache');
  t.same(fake.unexpected, []);
});

t.test('a shared lookup that fails fails every caller waiting on it, and is not cached', async (t) => {
  const held = heldAnswer(failing(500));
  const fake = await fakeDirectory(t, { '/domain/b1': [held.route, json(['acme'])] });
  const dir = createBuildingDirectory({ baseUrl: fake.url, cacheTtlMs: 60_000 });
  const calls = Array.from({ length: 20 }, () => dir.domainsOf('b1', claims));
  await held.arrived;
  held.release();
  const results = await outcomes(calls);
  t.same(results.map((r) => ('error' in r ? (r.error as DirectoryError).code : r)), Array(20).fill('bad_status'), 'all 20 callers got the failure');
  t.match(results[0], { error: { name: 'DirectoryError', status: 500 } });
  t.equal(fake.calls.length, 1, 'one directory request for 20 concurrent callers');
  t.same(await dir.domainsOf('b1', claims), ['acme'], 'the next call after the failure asks again');
  t.equal(fake.calls.length, 2);
  t.same(fake.unexpected, []);
});

t.test('a shared lookup that times out fails every caller waiting on it, and the next call asks again', async (t) => {
  const fake = await fakeDirectory(t, { '/domain/b1': [() => { /* never answers */ }, json(['acme'])] });
  const dir = createBuildingDirectory({ baseUrl: fake.url, cacheTtlMs: 60_000, timeoutMs: 1000 });
  const results = await outcomes(Array.from({ length: 20 }, () => dir.domainsOf('b1', claims)));
  t.same(results.map((r) => ('error' in r ? (r.error as DirectoryError).code : r)), Array(20).fill('timeout'), 'all 20 callers got the timeout');
  t.equal(fake.calls.length, 1, 'one directory request for 20 concurrent callers');
  t.same(await dir.domainsOf('b1', claims), ['acme'], 'the next call after the timeout asks again');
  t.equal(fake.calls.length, 2);
  t.same(fake.unexpected, []);
});

t.test('concurrent callers share an empty answer, which is still not cached without cacheEmpty', async (t) => {
  const held = heldAnswer(json([]));
  const fake = await fakeDirectory(t, { '/domain/b1': [held.route, json(['acme'])] });
  const dir = createBuildingDirectory({ baseUrl: fake.url, cacheTtlMs: 60_000 });
  const calls = Array.from({ length: 20 }, () => dir.domainsOf('b1', claims));
  await held.arrived;
  held.release();
  t.same(await outcomes(calls), Array(20).fill({ domains: [] }));
  t.equal(fake.calls.length, 1, 'one directory request for 20 concurrent callers');
  t.same(await dir.domainsOf('b1', claims), ['acme'], 'the empty answer was not cached');
  t.same(fake.unexpected, []);
});

t.test('a client without a cache makes one request per call, even for concurrent calls of one building', async (t) => {
  const fake = await fakeDirectory(t, { '/domain/b1': Array.from({ length: 20 }, () => json(['acme'])) });
  const dir = createBuildingDirectory({ baseUrl: fake.url, cacheTtlMs: 0 });
  const callers = Array.from({ length: 20 }, (_, i) => encodeClaims({ sub: `u${i}`, memberships: [] }));
  t.same(await outcomes(callers.map((c) => dir.domainsOf('b1', c))), Array(20).fill({ domains: ['acme'] }));
  t.equal(fake.calls.length, 20, 'each call asked the directory');
  t.same(fake.calls.map((c) => c.claims).sort(), [...callers].sort(), 'each with its own caller\'s claims');
  t.same(fake.unexpected, []);
});
