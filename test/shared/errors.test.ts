import t from 'tap';
import express from 'express';
import { Writable } from 'node:stream';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { request } from 'undici';
import { errorBody, errorHandler, HttpError, jsonBody, notFoundHandler, describeError, reportedProblems, unknownKeyProblems } from '../../shared/errors.js';
import { DependencyUnreachable } from '../../shared/describe-error.js';
import { createLogger } from '../../shared/logger.js';
import { serve } from '../support/http.js';

t.test('errorBody fixes the type by status', async (t) => {
  t.same(errorBody(404, 'nope'), { type: 'Not Found', message: 'nope' });
  t.same(errorBody(400, 'bad', { errors: [1] }), { errors: [1], type: 'Validation Error', message: 'bad' });
  t.same(errorBody(502, 'x').type, 'Bad Gateway');
});

t.test('the handler maps malformed JSON to 400, oversize to 413, and hides internals', async (t) => {
  const lines: string[] = [];
  const sink = new Writable({ write(chunk, _enc, cb) { lines.push(chunk.toString()); cb(); } });
  const logger = createLogger('test', { destination: sink });
  const app = express();
  app.use(jsonBody());
  // Fails before any route matches, as app-level middleware does, on a path holding a bearer secret.
  app.use('/invite-codes', (_req, _res, next) => { next(new Error('failed before routing')); });
  app.post('/echo', (req, res) => { res.json(req.body); });
  app.get('/conflict', () => { throw new HttpError(409, 'domain name already taken'); });
  app.get('/buildings/:id', (req, res) => { res.json({ id: req.params.id }); });
  app.get('/boom', () => {
    const err = Object.assign(new Error('duplicate key value violates unique constraint "x" SELECT * FROM secrets WHERE password = \'hunter2\''), { code: '23505' });
    throw err;
  });
  app.use(notFoundHandler);
  app.use(errorHandler(logger));
  const { url } = await serve(t, app);

  let r = await request(`${url}/echo`, { method: 'POST', body: '{"a":', headers: { 'content-type': 'application/json' } });
  t.equal(r.statusCode, 400);
  t.same(await r.body.json(), { type: 'Validation Error', message: 'request body is not valid JSON' });

  r = await request(`${url}/echo`, { method: 'POST', body: JSON.stringify({ a: 'x'.repeat(10 * 1024 * 1024) }), headers: { 'content-type': 'application/json' } });
  t.equal(r.statusCode, 413);
  t.same(await r.body.json(), { type: 'Payload Too Large', message: 'request body is too large' });

  r = await request(`${url}/echo`, { method: 'POST', body: '{"a":1}', headers: { 'content-type': 'application/json' } });
  t.same(await r.body.json(), { a: 1 });

  r = await request(`${url}/echo`, { method: 'POST', body: 'not gzip at all', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
  t.equal(r.statusCode, 400, 'a body its Content-Encoding cannot inflate is bad input, not a 500');
  t.same(await r.body.json(), { type: 'Validation Error', message: 'request body is not valid for its Content-Encoding' });
  r = await request(`${url}/echo`, { method: 'POST', body: gzipSync('{"a":2}'), headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
  t.same(await r.body.json(), { a: 2 }, 'a valid gzip body is read');
  for (const encoding of ['br', 'deflate']) {
    r = await request(`${url}/echo`, { method: 'POST', body: 'not compressed at all', headers: { 'content-type': 'application/json', 'content-encoding': encoding } });
    t.equal(r.statusCode, 400, `a body ${encoding} cannot decode is bad input, not a 500`);
    t.same(await r.body.json(), { type: 'Validation Error', message: 'request body is not valid for its Content-Encoding' });
  }
  r = await request(`${url}/echo`, { method: 'POST', body: brotliCompressSync('{"a":3}'), headers: { 'content-type': 'application/json', 'content-encoding': 'br' } });
  t.same(await r.body.json(), { a: 3 }, 'a valid brotli body is read');

  r = await request(`${url}/conflict`);
  t.equal(r.statusCode, 409);
  t.same(await r.body.json(), { type: 'Conflict', message: 'domain name already taken' });

  r = await request(`${url}/boom`);
  t.equal(r.statusCode, 500);
  const text = await r.body.text();
  t.same(JSON.parse(text), { type: 'Internal Server Error', message: 'internal error' });
  t.notMatch(text, /SELECT|hunter2|stack|at /);
  const logged = lines.join('');
  t.match(logged, /Error \(23505\)/, 'the cause is logged by class and code');
  t.match(logged, /"path":"\/boom"/, 'under the route it failed on');
  t.notMatch(logged, /SELECT|hunter2|\.ts:\d+/, 'without SQL, secrets or a stack');

  r = await request(`${url}/buildings/b%2F1`);
  t.same(await r.body.json(), { id: 'b/1' }, 'a percent-encoded parameter decodes');
  r = await request(`${url}/buildings/%E0%A4%A`);
  t.equal(r.statusCode, 400, 'a parameter that is not valid percent-encoding is bad input, not a 500');
  t.same(await r.body.json(), { type: 'Validation Error', message: 'the URL path is not valid percent-encoding' });
  t.notMatch(lines.join(''), /URIError|Z_DATA_ERROR/, 'and neither is logged as an unhandled error');

  r = await request(`${url}/invite-codes/0123456789abcdef0123456789abcdef/redeem`, { method: 'POST' });
  t.equal(r.statusCode, 500);
  await r.body.dump();
  t.match(lines.join(''), /"path":"\/invite-codes\/…"/, 'an error before routing names the path by its first segment');
  t.notMatch(lines.join(''), /0123456789abcdef0123456789abcdef/, 'and never the rest, which may be a secret');

  r = await request(`${url}/nowhere`);
  t.equal(r.statusCode, 404);
  t.same(await r.body.json(), { type: 'Not Found', message: 'no such route' });
});

t.test('describeError says class and code only', async (t) => {
  t.equal(describeError(new TypeError('secret stuff')), 'TypeError');
  t.equal(describeError(Object.assign(new Error('x'), { code: 'ECONNREFUSED' })), 'Error (ECONNREFUSED)');
  t.equal(describeError('str'), 'string');
});

t.test('reported problems are capped, and unknown keys are cut, so a 400 is never an amplifier', async (t) => {
  t.same(reportedProblems(['a', 'b']), ['a', 'b']);
  t.same(reportedProblems(['a', 'b', 'c'], 0, 2), ['a', 'b', 'and 1 more']);
  t.same(reportedProblems(['a'], 5, 2), ['a', 'and 5 more'], 'problems the caller never described are counted');
  const keys = ['short', 'y'.repeat(100), ...Array.from({ length: 30 }, (_, i) => `k${i}`)];
  const described = unknownKeyProblems(keys, (key) => `${key}: unknown`);
  t.equal(described.problems.length, 20);
  t.equal(described.notListed, 12);
  t.equal(described.problems[0], 'short: unknown');
  t.equal(described.problems[1], `${'y'.repeat(64)}…: unknown`, 'a long key is cut at 64 characters');
  t.same(reportedProblems(described.problems, described.notListed).slice(-1), ['and 12 more']);
});

t.test('DependencyUnreachable names host, port and database, never user info', async (t) => {
  const cause = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  t.equal(new DependencyUnreachable('PostgreSQL', 'postgres://u:pw@db:5432/lintel', cause).message, 'cannot reach PostgreSQL at db:5432/lintel: Error (ECONNREFUSED)');
  t.equal(new DependencyUnreachable('Redis', 'redis://:hunter2@cache:6379', cause).message, 'cannot reach Redis at cache:6379: Error (ECONNREFUSED)');
  const odd = new DependencyUnreachable('Redis', 'redis://cache:6379/0@x:y', cause).message;
  t.equal(odd, 'cannot reach Redis at cache:6379: Error (ECONNREFUSED)', 'a path that could hold part of a password is left out');
});

