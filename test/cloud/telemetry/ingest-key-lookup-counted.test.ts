/**
 * A batch signed with a per-gateway key whose cache entry has expired looks the key up in PostgreSQL
 * before the ingest service sees it. When that lookup fails (PostgreSQL unreachable, a failed
 * statement) the batch answers 500, and it must still show on /metrics as outcome="error", once.
 */
import { connect, createServer, type Socket } from 'node:net';
import pg from 'pg';
import t from 'tap';
import { migrate } from '../../../cloud/telemetry/store/migrate.js';
import { freshPgDatabase, quietAtTeardown } from './support/database.js';
import { call, postSigned, startHarness, temperatureReading, type Harness } from './support/harness.js';

const KEY_CACHE_TTL_MS = 30_000;

interface Tap {
  teardown(fn: () => unknown): void;
}

/** The batches counted under `outcome` on /metrics. */
async function batchesCounted(h: Harness, outcome: string): Promise<number> {
  const metrics = await call(`${h.url}/metrics`, 'GET');
  const line = new RegExp(`^telemetry_ingest_batches_total\\{outcome="${outcome}",service="telemetry"\\} (\\d+)$`, 'm').exec(metrics.text);
  if (!line) throw new Error(`no telemetry_ingest_batches_total{outcome="${outcome}"} on /metrics`);
  return Number(line[1]);
}

/**
 * A loopback TCP forwarder to the stack's PostgreSQL that can be cut, as a database going away: the
 * connections through it close, and new ones are refused (nothing listens on its port any more).
 */
async function cuttableForwarder(t: Tap, target: URL): Promise<{ port: number; cut(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  };
  const server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    track(client);
    track(upstream);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  let open = true;
  const cut = async () => {
    if (!open) return;
    open = false;
    const closed = new Promise((resolve) => server.close(resolve));
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  t.teardown(cut);
  return { port: (server.address() as { port: number }).port, cut };
}

/** A harness whose X-Key-Id lookups are cached KEY_CACHE_TTL_MS, and a key of building b1 it accepted once. */
async function withCachedKey(t: Tap, options: { keyLookupPool?: pg.Pool; pool?: pg.Pool } = {}): Promise<{ h: Harness; secret: string }> {
  const h = await startHarness(t, { keyCacheTtlMs: KEY_CACHE_TTL_MS, ...options });
  const secret = await h.keys.add('gw-lisbon-01', ['b1']);
  const first = await postSigned(h, { readings: [temperatureReading('b1', 'r1', h.clock.now, 20)] }, { secret, keyId: 'gw-lisbon-01' });
  if (first.status !== 200) throw new Error(`the key's first batch answered ${first.status}: ${first.text}`);
  return { h, secret };
}

t.test('a batch whose expired key lookup fails in PostgreSQL answers 500 and counts once as outcome="error"', async (t) => {
  const { h, secret } = await withCachedKey(t);
  // Every lookup from now on fails in the database, as the metrics-accuracy test breaks a batch.
  await h.pool.query('ALTER TABLE ingest_keys RENAME TO ingest_keys_away');
  const send = () => postSigned(h, { readings: [temperatureReading('b1', 'r1', h.clock.now, 21)] }, { secret, keyId: 'gw-lisbon-01' });
  t.equal((await send()).status, 200, 'within the cache lifetime the key is not looked up');

  h.clock.now += KEY_CACHE_TTL_MS + 1;
  const before = { error: await batchesCounted(h, 'error'), accepted: await batchesCounted(h, 'accepted'), badSignature: await batchesCounted(h, 'bad_signature') };
  const answer = await send();
  t.equal(answer.status, 500, 'the cache entry expired: the lookup runs and fails');
  t.notMatch(answer.text, /ingest_keys/, 'no SQL detail in the answer');
  t.equal(await batchesCounted(h, 'error'), before.error + 1, 'counted as an error, once');
  t.equal(await batchesCounted(h, 'accepted'), before.accepted, 'not as accepted');
  t.equal(await batchesCounted(h, 'bad_signature'), before.badSignature, 'not as a bad signature');
});

t.test('a batch whose expired key lookup cannot reach PostgreSQL answers 500 and counts once as outcome="error"', async (t) => {
  const url = await freshPgDatabase(t);
  const pool = quietAtTeardown(new pg.Pool({ connectionString: url, max: 10 }));
  t.teardown(() => pool.end());
  await migrate(pool);
  const forwarder = await cuttableForwarder(t, new URL(url));
  const through = new URL(url);
  through.hostname = '127.0.0.1';
  through.port = String(forwarder.port);
  const keyLookupPool = quietAtTeardown(new pg.Pool({ connectionString: through.toString(), max: 2, connectionTimeoutMillis: 2000 }));
  t.teardown(() => keyLookupPool.end());
  const { h, secret } = await withCachedKey(t, { pool, keyLookupPool });

  await forwarder.cut();
  h.clock.now += KEY_CACHE_TTL_MS + 1;
  const before = { error: await batchesCounted(h, 'error'), accepted: await batchesCounted(h, 'accepted') };
  const answer = await postSigned(h, { readings: [temperatureReading('b1', 'r1', h.clock.now, 21)] }, { secret, keyId: 'gw-lisbon-01' });
  t.equal(answer.status, 500, 'the key cannot be looked up');
  t.equal(await batchesCounted(h, 'error'), before.error + 1, 'counted as an error, once');
  t.equal(await batchesCounted(h, 'accepted'), before.accepted, 'not as accepted');
});

t.test('a 500 inside the ingest service is still counted once, not again by the route', async (t) => {
  const { h, secret } = await withCachedKey(t);
  await h.pool.query('ALTER TABLE ingest_batches RENAME TO ingest_batches_away');
  const before = await batchesCounted(h, 'error');
  const answer = await postSigned(h, { batchId: 'tick-1', readings: [temperatureReading('b1', 'r1', h.clock.now, 21)] }, { secret, keyId: 'gw-lisbon-01' });
  t.equal(answer.status, 500, 'the batch id cannot be claimed');
  t.equal(await batchesCounted(h, 'error'), before + 1, 'counted by the service alone');
});
