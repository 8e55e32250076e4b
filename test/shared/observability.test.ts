import t from 'tap';
import { randomBytes } from 'node:crypto';
import express from 'express';
import { Writable } from 'node:stream';
import { request } from 'undici';
import { createRegistry, metricsHandler, zeroLabels, Counter } from '../../shared/prom.js';
import { REDACTED, createLogger } from '../../shared/logger.js';
import { requireClaims, callerOf, healthHandler } from '../../shared/http.js';
import { encodeClaims } from '../../shared/claims.js';
import { errorHandler } from '../../shared/errors.js';
import { serve } from '../support/http.js';

t.test('a registry per service serves its series, zeroed from startup', async (t) => {
  const registry = createRegistry('relay');
  const rejected = new Counter({ name: 'socket_subscriptions_rejected_total', help: 'refused', labelNames: ['reason'], registers: [registry] });
  zeroLabels(rejected, 'reason', ['forbidden', 'lookup_failed']);
  const app = express();
  app.get('/metrics', metricsHandler(registry));
  const { url } = await serve(t, app);
  const r = await request(`${url}/metrics`);
  t.match(r.headers['content-type'], /text\/plain/);
  const text = await r.body.text();
  t.match(text, /socket_subscriptions_rejected_total\{reason="forbidden",service="relay"\} 0/);
  t.match(text, /socket_subscriptions_rejected_total\{reason="lookup_failed",service="relay"\} 0/);
  t.match(text, /process_cpu_user_seconds_total/, 'default metrics');
});

t.test('the logger redacts claims, signatures and secrets', async (t) => {
  const lines: string[] = [];
  const sink = new Writable({ write(chunk, _e, cb) { lines.push(chunk.toString()); cb(); } });
  const logger = createLogger('test', { destination: sink });
  const claims = encodeClaims({ sub: 'u-secret-sub' });
  logger.info({ req: { headers: { 'x-gateway-claims': claims, 'x-signature': 'abc123sig', cookie: 'authentication_token=tok' } }, config: { password: 'hunter2', secret: 's3cr3t' }, token: 'tkn' }, 'request');
  const out = lines.join('');
  for (const leaked of [claims, 'abc123sig', 'authentication_token', 'hunter2', 's3cr3t', 'tkn']) t.notMatch(out, leaked);
  t.match(out, /\[redacted\]/);
});

t.test('the logger redacts signing secrets and connection URLs by their env names, and nested secrets', async (t) => {
  const lines: string[] = [];
  const sink = new Writable({ write(chunk, _e, cb) { lines.push(chunk.toString()); cb(); } });
  const logger = createLogger('test', { destination: sink });
  logger.info({ INTERNAL_SIGNING_SECRET: 'ring-new,ring-old', config: { INGEST_SIGNING_SECRET: 'ingest-key', DATABASE_URL: 'postgres://lintel:pg-pass@db/lintel', MONGO_URI: 'mongodb://u:mongo-pass@m/db', REDIS_URL: 'redis://:redis-pass@r', VAPID_PRIVATE_KEY: 'vapid-priv' } }, 'config');
  logger.info({ push: { vapidPrivateKey: 'vp2', apiKey: 'ak' }, caller: { claimsHeader: 'hdr', token: 'tk2' }, mac: 'aa:bb:cc:dd:ee:ff' }, 'nested');
  const out = lines.join('');
  for (const leaked of ['ring-new', 'ingest-key', 'pg-pass', 'mongo-pass', 'redis-pass', 'vapid-priv', 'vp2', '"ak"', 'hdr', 'tk2', 'aa:bb']) t.notMatch(out, leaked, leaked);
  t.equal(lines.length, 2, 'both lines were written');
});

t.test('the logger redacts at any depth, in arrays and error objects, whatever the key case, and logs no stack', async (t) => {
  const lines: string[] = [];
  const sink = new Writable({ write(chunk, _e, cb) { lines.push(chunk.toString()); cb(); } });
  const logger = createLogger('test', { destination: sink });
  // Every value that must not reach the log is made now, so none is written in this file.
  const made: string[] = [];
  const v = () => {
    const value = `v${randomBytes(6).toString('hex')}`;
    made.push(value);
    return value;
  };
  logger.info({ headers: { Authorization: `Bearer ${v()}`, 'X-Gateway-Claims': v(), 'X-Signature': v(), 'Set-Cookie': [`sid=${v()}`] } }, 'header case');
  logger.info({ upstream: { request: { headers: { authorization: `Bearer ${v()}`, 'x-gateway-claims': v() } } }, config: { db: { password: v() } } }, 'deep');
  const arrayPassword = v();
  logger.info({ sensors: [{ sensorId: 's1', password: arrayPassword }], rings: [[{ secret: v() }]] }, 'arrays');
  logger.warn({ err: Object.assign(new Error(`connect to postgres://u:${v()}@db failed`), { code: 'ECONNREFUSED', config: { password: v() } }) }, 'error object');
  logger.info({ clientSecret: v(), refresh_token: v(), accessToken: v(), 'api-key': v(), private_key: v() }, 'secret-named keys');
  logger.child({ request: { headers: { cookie: v() } } }).info('child bindings');
  const circular: Record<string, unknown> = { sensorId: 's1' };
  circular.self = circular;
  logger.info({ circular }, 'circular');
  t.equal(lines.length, 7, 'every line was written');
  const out = lines.join('');
  for (const leaked of made) t.notMatch(out, leaked, leaked);
  t.notMatch(out, /"stack"|at .*\.ts:\d+/, 'no stack trace');
  const [, , arrays, errorLine] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  t.same(arrays?.sensors, [{ sensorId: 's1', password: REDACTED }], 'the rest of the object is kept');
  t.equal(errorLine?.err, 'Error (ECONNREFUSED)', 'an error is logged as its class and code');
});

t.test('requireClaims answers 401 in the shared body and keeps the caller', async (t) => {
  const app = express();
  app.get('/health', healthHandler);
  app.get('/me', requireClaims({ requireAccountName: true }), (_req, res) => { res.json({ sub: callerOf(res).sub }); });
  app.use(errorHandler());
  const { url } = await serve(t, app);
  let r = await request(`${url}/me`);
  t.equal(r.statusCode, 401);
  t.same(await r.body.json(), { type: 'Unauthorized', message: 'x-gateway-claims rejected: missing' });
  r = await request(`${url}/me`, { headers: { 'x-gateway-claims': encodeClaims({ sub: 'u1' }) } });
  t.equal(r.statusCode, 401);
  t.same(await r.body.json(), { type: 'Unauthorized', message: 'x-gateway-claims rejected: accountName missing' });
  r = await request(`${url}/me`, { headers: { 'x-gateway-claims': encodeClaims({ sub: 'u1', accountName: 'ana' }) } });
  t.same(await r.body.json(), { sub: 'u1' });
  r = await request(`${url}/health`);
  t.same(await r.body.json(), { status: 'ok' });
});
