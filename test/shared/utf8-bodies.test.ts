/**
 * JSON bodies must be UTF-8. Decoded leniently, each byte that is not would become U+FFFD, so two
 * different bodies could be stored as one value (a registry Name `acme\xFF` and `acme\xFE` both as
 * `acme\uFFFD`), and the caller would never learn its text was altered.
 */
import t, { type Test } from 'tap';
import express from 'express';
import { request } from 'undici';
import { gzipSync } from 'node:zlib';
import { sign } from '../../shared/hmac.js';
import { signedBody } from '../../shared/signed-body.js';
import { errorHandler, jsonBody } from '../../shared/errors.js';
import { serve } from '../support/http.js';

const secret = 'utf8-test-secret';
const json = { 'content-type': 'application/json' };
/** `{"name":"acme<bytes>"}` as raw bytes. */
const named = (...bytes: number[]) => Buffer.concat([Buffer.from('{"name":"acme'), Buffer.from(bytes), Buffer.from('"}')]);

async function app(t: Test) {
  const seen: unknown[] = [];
  const server = express();
  server.post('/plain', jsonBody(), (req, res) => {
    seen.push(req.body);
    res.json(req.body);
  });
  server.post('/signed', ...signedBody({ keys: secret }), (req, res) => {
    seen.push(req.body);
    res.json(req.body);
  });
  server.use(errorHandler());
  const { url } = await serve(t, server);
  return { url, seen };
}

const refused = { type: 'Validation Error', message: 'request body is not valid UTF-8' };

t.test('a JSON body with bytes that are not UTF-8 is 400, and the route never sees it', async (t) => {
  const { url, seen } = await app(t);
  const cases: Array<[string, Buffer]> = [
    ['a stray 0xFF', named(0xff)],
    ['a lone continuation byte', named(0x80)],
    ['a truncated sequence', named(0xe2, 0x82)],
    ['an overlong encoding of "/"', named(0xc0, 0xaf)],
    ['an encoded surrogate (CESU-8)', named(0xed, 0xa0, 0x80)],
  ];
  for (const [label, body] of cases) {
    const plain = await request(`${url}/plain`, { method: 'POST', body, headers: json });
    t.equal(plain.statusCode, 400, `jsonBody: ${label}`);
    t.same(await plain.body.json(), refused);
    const signed = await request(`${url}/signed`, { method: 'POST', body, headers: { ...json, 'x-signature': sign(body, secret) } });
    t.equal(signed.statusCode, 400, `signedBody: ${label}`);
    t.same(await signed.body.json(), refused);
  }
  const gzipped = await request(`${url}/plain`, { method: 'POST', body: gzipSync(named(0xff)), headers: { ...json, 'content-encoding': 'gzip' } });
  t.equal(gzipped.statusCode, 400, 'the inflated bytes are checked');
  t.same(await gzipped.body.json(), refused);
  t.same(seen, [], 'no route handled a refused body');
});

t.test('UTF-8 text of every width still reads as sent', async (t) => {
  const { url } = await app(t);
  const name = 'acmé-東京-🙂';
  const body = JSON.stringify({ name });
  const plain = await request(`${url}/plain`, { method: 'POST', body, headers: json });
  t.same(await plain.body.json(), { name });
  const signed = await request(`${url}/signed`, { method: 'POST', body, headers: { ...json, 'x-signature': sign(body, secret) } });
  t.same(await signed.body.json(), { name });
  const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(body)]);
  const withBom = await request(`${url}/plain`, { method: 'POST', body: bom, headers: json });
  t.equal(withBom.statusCode, 200, 'a leading byte order mark is UTF-8 too');
  t.same(await withBom.body.json(), { name });
});

t.test('a bad signature is still 403 before the bytes are looked at', async (t) => {
  const { url } = await app(t);
  const r = await request(`${url}/signed`, { method: 'POST', body: named(0xff), headers: { ...json, 'x-signature': sign('other', secret) } });
  t.equal(r.statusCode, 403);
  t.equal(await r.body.text(), 'invalid signature');
});

t.test('a JSON body in another charset is refused before it is decoded: utf-7 and utf-16 are not read as JSON text', async (t) => {
  const { url, seen } = await app(t);
  const cases: Array<[string, string]> = [
    ['utf-7 (ASCII bytes that decode to other text)', '{"name":"+ADw-script+AD4-"}'],
    ['utf-16le of an ASCII body', '{"name":"acme"}'],
  ];
  for (const [label, text] of cases) {
    const charset = label.startsWith('utf-7') ? 'utf-7' : 'utf-16le';
    const body = charset === 'utf-16le' ? Buffer.from(text, 'utf16le') : Buffer.from(text);
    const res = await request(`${url}/plain`, { method: 'POST', body, headers: { 'content-type': `application/json; charset=${charset}` } });
    t.equal(res.statusCode, 400, label);
    t.same(await res.body.json(), { type: 'Validation Error', message: 'unsupported body encoding' });
  }
  for (const type of ['application/json; charset=utf-8', 'application/json; charset=UTF-8', 'application/json']) {
    const res = await request(`${url}/plain`, { method: 'POST', body: '{"name":"acme"}', headers: { 'content-type': type } });
    t.equal(res.statusCode, 200, `${type} is read`);
    await res.body.dump();
  }
  t.same(seen, [{ name: 'acme' }, { name: 'acme' }, { name: 'acme' }], 'only the UTF-8 bodies reached the route');
});
