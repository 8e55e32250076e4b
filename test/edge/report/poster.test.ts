import t from 'tap';
import { sign } from '../../../shared/hmac.js';
import { createBatchPoster } from '../../../edge/src/report/poster.js';
import { countRows, startHarness } from '../../cloud/telemetry/support/harness.js';
import { startVerifyingIngest } from './verifying-ingest.js';

const body = JSON.stringify({
  batchId: 'hq@2026-11-22T19:04:14.000Z',
  readings: [{ type: 'totalDeviceCount', buildingId: 'hq', roomId: 'lobby', timestamp: 1795374254000, totalDeviceCount: 3 }],
});

t.test('a batch is posted signed over its exact bytes, with the key id', async (t) => {
  const ingest = await startVerifyingIngest(t, { default: 'shared-key', 'gw-1': 'gateway-key' });
  const poster = createBatchPoster({ url: ingest.url, secret: 'gateway-key', keyId: 'gw-1', timeoutMs: 10_000 });
  t.teardown(() => poster.close());
  t.same(await poster.post(body), { outcome: 'accepted', status: 200 });
  t.equal(ingest.received.length, 1);
  const got = ingest.received[0]!;
  t.equal(got.raw.toString('utf8'), body, 'the exact bytes');
  t.equal(got.headers['x-signature'], sign(body, 'gateway-key'));
  t.equal(got.headers['x-key-id'], 'gw-1');
  t.equal(got.headers['content-type'], 'application/json');
  t.ok(got.signatureValid);
  t.same(ingest.unexpected, []);
});

t.test('without a key id, the shared key signs and no X-Key-Id is sent', async (t) => {
  const ingest = await startVerifyingIngest(t, { default: 'shared-key' });
  const poster = createBatchPoster({ url: ingest.url, secret: 'shared-key', timeoutMs: 10_000 });
  t.teardown(() => poster.close());
  t.same(await poster.post(body), { outcome: 'accepted', status: 200 });
  t.equal(ingest.received[0]!.headers['x-key-id'], undefined);
});

t.test('against the real telemetry ingest: accepted, refused readings and a wrong key, each with the service’s own answer', async (t) => {
  const h = await startHarness(t);
  const secret = await h.keys.add('gw-poster', ['hq'], 'poster test gateway');
  const poster = createBatchPoster({ url: `${h.url}/ingest`, secret, keyId: 'gw-poster', timeoutMs: 10_000 });
  t.teardown(() => poster.close());
  const now = Date.now();
  const fresh = JSON.stringify({ batchId: `hq@${new Date(now).toISOString()}`, readings: [{ type: 'totalDeviceCount', buildingId: 'hq', roomId: 'lobby-é', timestamp: now, totalDeviceCount: 3 }] });
  t.same(await poster.post(fresh), { outcome: 'accepted', status: 200 }, 'signed over the exact UTF-8 bytes');
  t.equal(await countRows(h.pool, 'readings'), 1);
  const invalid = JSON.stringify({ batchId: 'x', readings: [{ type: 'totalDeviceCount', buildingId: 'hq', roomId: 'lobby', timestamp: now, totalDeviceCount: -1 }] });
  t.same(await poster.post(invalid), { outcome: 'rejected', status: 400, reason: '1 of 1 readings are invalid; nothing was stored' });
  const wrongKey = createBatchPoster({ url: `${h.url}/ingest`, secret: 'not-the-gateway-secret-0123', keyId: 'gw-poster', timeoutMs: 10_000 });
  t.teardown(() => wrongKey.close());
  t.same(await wrongKey.post(fresh), { outcome: 'rejected', status: 403, reason: 'invalid signature' });
  t.equal(await countRows(h.pool, 'readings'), 1, 'nothing more stored');
});

t.test('a rejected post is an outcome with the reason, not an exception', async (t) => {
  const ingest = await startVerifyingIngest(t, { default: 'shared-key' });
  const wrongKey = createBatchPoster({ url: ingest.url, secret: 'not-the-key', timeoutMs: 10_000 });
  t.teardown(() => wrongKey.close());
  t.same(await wrongKey.post(body), { outcome: 'rejected', status: 403, reason: 'invalid signature' });
  const poster = createBatchPoster({ url: ingest.url, secret: 'shared-key', timeoutMs: 10_000 });
  t.teardown(() => poster.close());
  const invalid = JSON.stringify({ batchId: 'x', readings: [{ type: 'nope' }] });
  t.same(await poster.post(invalid), { outcome: 'rejected', status: 400, reason: '1 of 1 readings are invalid; nothing was stored' });
  ingest.behave('fail-500');
  t.same(await poster.post(body), { outcome: 'rejected', status: 500, reason: 'internal error' });
});

t.test('an unreachable or silent ingest is an outcome too, bounded by the timeout', async (t) => {
  // The discard port: nothing listens there, and a port freed for the test could be taken meanwhile.
  const refused = createBatchPoster({ url: 'http://127.0.0.1:9/ingest', secret: 'k', timeoutMs: 10_000 });
  t.teardown(() => refused.close());
  t.same(await refused.post(body), { outcome: 'unreachable', reason: 'ECONNREFUSED' });

  const ingest = await startVerifyingIngest(t, { default: 'k' });
  ingest.behave('hang');
  const poster = createBatchPoster({ url: ingest.url, secret: 'k', timeoutMs: 300 });
  t.teardown(() => poster.close());
  t.same(await poster.post(body), { outcome: 'unreachable', reason: 'timeout' });
});
