import t from 'tap';
import express from 'express';
import { request } from 'undici';
import { gzipSync } from 'node:zlib';
import { sign, verify, keyRingFromEnv } from '../../shared/hmac.js';
import { signedBody } from '../../shared/signed-body.js';
import { errorHandler, jsonBody } from '../../shared/errors.js';
import { serve } from '../support/http.js';

const secret = 'current-secret';
const previous = 'previous-secret';

t.test('sign is lowercase hex HMAC-SHA256 of the exact bytes', async (t) => {
  // RFC 4231 test case 2.
  t.equal(sign('what do ya want for nothing?', 'Jefe'), '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
  t.not(sign('{"a":1}', secret), sign('{"a":1} ', secret), 'trailing whitespace changes the signature');
  t.equal(sign(Buffer.alloc(0), secret), sign('', secret));
});

t.test('verify accepts any key of the ring and rejects bad signatures without throwing', async (t) => {
  const body = Buffer.from('{"x":1}');
  t.ok(verify(body, sign(body, secret), [secret, previous]));
  t.ok(verify(body, sign(body, previous), [secret, previous]), 'the previous secret still verifies during rotation');
  t.notOk(verify(body, sign(body, 'other'), [secret, previous]));
  t.notOk(verify(body, sign(body, secret).toUpperCase(), secret), 'uppercase hex is a mismatch');
  t.notOk(verify(body, sign(body, secret).slice(2), secret), 'wrong length');
  t.notOk(verify(body, 'zz' + sign(body, secret).slice(2), secret), 'not hex');
  t.notOk(verify(body, undefined, secret));
  t.notOk(verify(body, 42, secret));
  t.notOk(verify(body, sign(body, secret), []), 'an empty ring accepts nothing');
  t.notOk(verify(body, sign(body, ''), ''), 'an empty secret accepts nothing');
});

t.test('keyRingFromEnv splits on commas, current first', async (t) => {
  t.same(keyRingFromEnv(' a , b,,c '), ['a', 'b', 'c']);
  t.same(keyRingFromEnv(''), []);
});

t.test('the middleware verifies the raw bytes before parsing', async (t) => {
  const app = express();
  const seen: unknown[] = [];
  app.post('/internal/x', ...signedBody({ keys: [secret, previous] }), (req, res) => {
    seen.push(req.body);
    res.json({ ok: true });
  });
  app.get('/internal/y', ...signedBody({ keys: secret }), (_req, res) => {
    res.json({ ok: true });
  });
  app.post('/keyed', ...signedBody({ keys: (req) => (req.get('x-key-id') === 'gw-1' ? 'gw-1-secret' : undefined) }), (_req, res) => {
    res.json({ ok: true });
  });
  app.use(errorHandler());
  const { url } = await serve(t, app);

  const body = '{"name":"acme"}  \n';
  let r = await request(`${url}/internal/x`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-signature': sign(body, secret) } });
  t.equal(r.statusCode, 200, 'trailing whitespace, signed over the exact bytes');
  await r.body.json();
  t.same(seen, [{ name: 'acme' }]);

  r = await request(`${url}/internal/x`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-signature': sign(body.trim(), secret) } });
  t.equal(r.statusCode, 403, 'signed without the trailing whitespace');
  t.equal(r.headers['content-type']?.toString().split(';')[0], 'text/plain');
  t.equal(await r.body.text(), 'invalid signature');

  for (const bad of [sign(body, secret).toUpperCase(), 'abc', 'g'.repeat(64), '']) {
    r = await request(`${url}/internal/x`, { method: 'POST', body, headers: { 'x-signature': bad } });
    t.equal(r.statusCode, 403, `signature ${JSON.stringify(bad.slice(0, 8))}`);
    await r.body.text();
  }

  r = await request(`${url}/internal/y`, { method: 'GET', headers: { 'x-signature': sign('', secret) } });
  t.equal(r.statusCode, 200, 'a GET is signed over empty bytes');
  await r.body.text();

  const notJson = '{"name":';
  r = await request(`${url}/internal/x`, { method: 'POST', body: notJson, headers: { 'x-signature': sign(notJson, secret) } });
  t.equal(r.statusCode, 400, 'signed but malformed JSON is a 400');
  t.same(await r.body.json(), { type: 'Validation Error', message: 'request body is not valid JSON' });

  r = await request(`${url}/keyed`, { method: 'POST', body: '{}', headers: { 'x-key-id': 'gw-1', 'x-signature': sign('{}', 'gw-1-secret') } });
  t.equal(r.statusCode, 200, 'a per-request key chosen by X-Key-Id');
  await r.body.text();
  r = await request(`${url}/keyed`, { method: 'POST', body: '{}', headers: { 'x-key-id': 'gw-2', 'x-signature': sign('{}', 'gw-1-secret') } });
  t.equal(r.statusCode, 403, 'an unknown key id');
  await r.body.text();
  t.equal(seen.length, 1, 'rejected requests never reached the handler');
});

t.test('a compressed signed body is refused: the signature covers the bytes received, never inflated ones', async (t) => {
  const app = express();
  let reached = 0;
  app.post('/internal/x', ...signedBody({ keys: secret }), (_req, res) => {
    reached++;
    res.json({ ok: true });
  });
  app.use(errorHandler());
  const { url } = await serve(t, app);
  const body = '{"name":"acme"}';
  const gzipped = gzipSync(body);
  for (const [label, signature] of [['signed over the inflated bytes', sign(body, secret)], ['signed over the bytes sent', sign(gzipped, secret)]] as const) {
    const r = await request(`${url}/internal/x`, { method: 'POST', body: gzipped, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'x-signature': signature } });
    t.equal(r.statusCode, 400, label);
    t.same(await r.body.json(), { type: 'Validation Error', message: 'unsupported body encoding' });
  }
  t.equal(reached, 0, 'the handler was never reached');
});

t.test('an oversize signed body is 413 before any verification', async (t) => {
  const app = express();
  app.post('/internal/x', ...signedBody({ keys: secret, limit: '1mb' }), (_req, res) => {
    res.json({ ok: true });
  });
  app.use(errorHandler());
  const { url } = await serve(t, app);
  const big = Buffer.alloc(10 * 1024 * 1024, 0x20);
  const r = await request(`${url}/internal/x`, { method: 'POST', body: big, headers: { 'x-signature': sign(big, secret) } });
  t.equal(r.statusCode, 413);
  t.same(await r.body.json(), { type: 'Payload Too Large', message: 'request body is too large' });
});

t.test('a body parsed before the signature check is refused, never verified as empty bytes', async (t) => {
  const app = express();
  let reached = 0;
  app.post('/internal/x', jsonBody(), ...signedBody({ keys: secret }), (_req, res) => {
    reached += 1;
    res.json({ ok: true });
  });
  app.use(errorHandler());
  const { url } = await serve(t, app);
  const body = '{"role":"admin"}';
  // A GET's signature (over empty bytes) must not carry a POST whose body another parser consumed.
  let r = await request(`${url}/internal/x`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-signature': sign('', secret) } });
  t.equal(r.statusCode, 500, 'a wiring mistake, answered as an internal error');
  t.same(await r.body.json(), { type: 'Internal Server Error', message: 'internal error' });
  r = await request(`${url}/internal/x`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-signature': sign(body, secret) } });
  t.equal(r.statusCode, 500, 'even a correct signature cannot be checked');
  await r.body.text();
  t.equal(reached, 0);
});
