import t, { type Test } from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createBuildingDirectory, DirectoryError } from '../../shared/directory.js';
import { encodeClaims } from '../../shared/claims.js';
import { listen, closeServer } from '../../shared/lifecycle.js';

type Route = (req: IncomingMessage, res: ServerResponse) => void;

/** A building directory that answers only the buildings it was set up with, and records every call. */
async function fakeDirectory(t: Test, routes: Record<string, Route>) {
  const calls: { url: string; claims: string | undefined }[] = [];
  const unexpected: string[] = [];
  const server = createServer((req, res) => {
    calls.push({ url: req.url ?? '', claims: req.headers['x-gateway-claims'] as string | undefined });
    const route = req.method === 'GET' ? routes[req.url ?? ''] : undefined;
    if (!route) {
      unexpected.push(req.url ?? '');
      res.writeHead(500).end('unexpected call');
      return;
    }
    route(req, res);
  });
  const port = await listen(server, 0, '127.0.0.1');
  t.teardown(() => closeServer(server));
  // Registered after the close, so it runs first: any call the test did not set up fails it.
  t.teardown(() => {
    if (unexpected.length > 0) throw new Error(`the directory got calls it was not set up for: ${unexpected.join(', ')}`);
  });
  return { url: `http://127.0.0.1:${port}`, calls, unexpected };
}

const claims = encodeClaims({ sub: 'u1', accountName: 'ana', memberships: [{ domainName: 'acme', role: 'member' }] });
const json = (body: unknown): Route => (_req, res) => { res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body)); };

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
  const closed = createServer();
  const port = await listen(closed, 0, '127.0.0.1');
  await closeServer(closed);
  const gone = createBuildingDirectory({ baseUrl: `http://127.0.0.1:${port}`, cacheTtlMs: 0, timeoutMs: 10_000 });
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
