import t from 'tap';
import { sign } from '../../../shared/hmac.js';
import {
  PREVIOUS_SECRET,
  SHARED_KEY,
  call,
  countRows,
  peopleReading,
  postSigned,
  startHarness,
  subscribe,
  temperatureReading,
  until,
} from './support/harness.js';

t.test('a signed batch is validated, stored in one go, and published raw and filtered', async (t) => {
  const h = await startHarness(t);
  const messages = await subscribe(t, h.redisUrl, [h.channels.raw, `${h.channels.filteredPrefix}b1`]);
  const now = h.clock.now;
  const body = {
    readings: [
      temperatureReading('b1', 'r1', now - 2000, 21.5, { humidity: 40, sensorId: 's-1' }),
      temperatureReading('b1', 'r2', now - 1000, 22),
      peopleReading('b1', 'r1', now - 500, 1),
    ],
  };
  const answer = await postSigned(h, body);
  t.equal(answer.status, 200);
  t.same(answer.json, { accepted: 3 });

  const { rows } = await h.pool.query('SELECT building_id, room_id, metric, ts, value, payload FROM readings ORDER BY ts');
  t.equal(rows.length, 3);
  t.match(rows[0], { building_id: 'b1', room_id: 'r1', metric: 'temperature', value: 21.5, payload: { humidity: 40, sensorId: 's-1' } });
  t.equal((rows[0].ts as Date).getTime(), now - 2000, 'ts is the reading timestamp (epoch ms)');
  t.same(rows[1].payload, {}, 'no fields beyond the columns, empty payload');
  t.match(rows[2], { metric: 'peopleCount', value: 1 }, 'live raw rows keep the true count of 1');

  await until(() => messages.length === 6, 5000, 'six publications');
  const raw = messages.filter((m) => m.channel === h.channels.raw).map((m) => m.message);
  const filtered = messages.filter((m) => m.channel === `${h.channels.filteredPrefix}b1`).map((m) => m.message);
  t.same(raw[0], body.readings[0], 'telemetry:raw carries the accepted reading');
  t.same(filtered[2], { type: 'peopleCount', buildingId: 'b1', roomId: 'r1', timestamp: now - 500, peopleCount: 1 }, 'the filtered view keeps the true value');
});

t.test('published messages keep batch order across buildings and survive text that looks like JSON', async (t) => {
  const h = await startHarness(t);
  const messages = await subscribe(t, h.redisUrl, [h.channels.raw, `${h.channels.filteredPrefix}b1`, `${h.channels.filteredPrefix}b2`]);
  const now = h.clock.now;
  // 'lobby,{' ends its JSON string as `,{"`, the very bytes that begin the next element.
  const tricky = ['r,{"type":"peopleCount"}', 'r},{"x', 'r\\",{\\"', 'r-é-🙂', 'r{"', 'r\\', 'lobby,{', ',{'];
  const readings = tricky.flatMap((roomId, i) => [
    temperatureReading(i % 2 === 0 ? 'b1' : 'b2', roomId, now - 100 + i, 20 + i, { sensorId: `s,{"${i}` }),
    peopleReading('b2', roomId, now - 100 + i, i),
  ]);
  t.equal((await postSigned(h, { readings })).status, 200);
  await until(() => messages.length === readings.length * 2, 5000, 'every message');
  const on = (channel: string) => messages.filter((m) => m.channel === channel).map((m) => m.message);
  t.same(on(h.channels.raw), readings, 'the raw channel carries every reading, in batch order');
  t.same(on(`${h.channels.filteredPrefix}b1`), readings.filter((r) => r.buildingId === 'b1'));
  t.same(on(`${h.channels.filteredPrefix}b2`), readings.filter((r) => r.buildingId === 'b2'));
  const { rows } = await h.pool.query<{ room_id: string }>("SELECT DISTINCT room_id FROM readings WHERE metric = 'temperature' ORDER BY room_id");
  t.same(rows.map((r) => r.room_id).sort(), [...tricky].sort(), 'stored with the same text');
});

t.test('a batch repeating stored readings publishes only the readings it stored, in batch order', async (t) => {
  const h = await startHarness(t);
  const messages = await subscribe(t, h.redisUrl, [h.channels.raw, `${h.channels.filteredPrefix}b1`]);
  const now = h.clock.now;
  const first = [temperatureReading('b1', 'r1', now - 4000, 21), temperatureReading('b1', 'r2', now - 3000, 22)];
  t.equal((await postSigned(h, { batchId: 'first', readings: first })).status, 200);
  // A new batch id: r1 again (another value: the stored copy is kept), a new reading, and a reading
  // repeated within the batch (its first copy is stored).
  const repeat = [
    temperatureReading('b1', 'r3', now - 2000, 23),
    temperatureReading('b1', 'r1', now - 4000, 99),
    temperatureReading('b1', 'r4', now - 1000, 1),
    temperatureReading('b1', 'r4', now - 1000, 2),
  ];
  const again = await postSigned(h, { batchId: 'repeat', readings: repeat });
  t.match(again, { status: 200, json: { accepted: 4 } }, 'the batch is accepted whole');
  const stored = await h.pool.query<{ room_id: string; value: number }>('SELECT room_id, value FROM readings ORDER BY room_id');
  t.same(stored.rows, [
    { room_id: 'r1', value: 21 },
    { room_id: 'r2', value: 22 },
    { room_id: 'r3', value: 23 },
    { room_id: 'r4', value: 1 },
  ]);
  // Publications keep batch order, so once a later batch's reading arrives nothing else of this one can.
  const last = temperatureReading('b1', 'r5', now, 25);
  t.equal((await postSigned(h, { batchId: 'last', readings: [last] })).status, 200);
  await until(() => messages.some((m) => m.channel === h.channels.raw && (m.message as { roomId?: string }).roomId === 'r5'), 5000, 'the last batch');
  await until(() => messages.filter((m) => m.channel === `${h.channels.filteredPrefix}b1`).length === 5, 5000, 'the filtered copies');
  const expected = [...first, repeat[0], repeat[2], last];
  t.same(messages.filter((m) => m.channel === h.channels.raw).map((m) => m.message), expected, 'the repeat of r1 and the second r4 were not published');
  t.same(messages.filter((m) => m.channel === `${h.channels.filteredPrefix}b1`).map((m) => m.message), expected);

  const allRepeats = await postSigned(h, { batchId: 'all-repeats', readings: [first[0], first[1]] });
  t.match(allRepeats, { status: 200, json: { accepted: 2 } });
  const after = temperatureReading('b1', 'r6', now, 26);
  t.equal((await postSigned(h, { batchId: 'after', readings: [after] })).status, 200);
  await until(() => messages.some((m) => (m.message as { roomId?: string }).roomId === 'r6' && m.channel === h.channels.raw), 5000, 'the batch after');
  t.same(messages.filter((m) => m.channel === h.channels.raw).map((m) => m.message), [...expected, after], 'a batch of repeats alone publishes nothing');
});

t.test('the alias path /telemetry/ingest is the same route', async (t) => {
  const h = await startHarness(t);
  const answer = await postSigned(h, { readings: [peopleReading('b1', 'r1', h.clock.now, 4)] }, { path: '/telemetry/ingest' });
  t.equal(answer.status, 200);
  t.equal(await countRows(h.pool, 'readings'), 1);
});

t.test('signatures: over the exact bytes, by key ring or by X-Key-Id', async (t) => {
  const h = await startHarness(t);
  const body = JSON.stringify({ readings: [peopleReading('b1', 'r1', h.clock.now, 2)] });

  const wrong = await call(`${h.url}/ingest`, 'POST', body, { 'content-type': 'application/json', 'x-signature': sign(body, 'not-the-secret-at-all!') });
  t.equal(wrong.status, 403);
  t.equal(wrong.text, 'invalid signature');
  t.match(wrong.contentType, /^text\/plain/);

  const missing = await call(`${h.url}/ingest`, 'POST', body, { 'content-type': 'application/json' });
  t.equal(missing.status, 403, 'no signature at all');

  const reformatted = JSON.stringify(JSON.parse(body), null, 2);
  const moved = await call(`${h.url}/ingest`, 'POST', reformatted, { 'content-type': 'application/json', 'x-signature': sign(body, 'shared-ingest-secret-0123456789') });
  t.equal(moved.status, 403, 'the same JSON with other bytes does not match: the exact bytes are signed');
  t.equal(await countRows(h.pool, 'readings'), 0, 'nothing stored by a rejected signature');

  const previous = await postSigned(h, body, { secret: PREVIOUS_SECRET });
  t.equal(previous.status, 200, 'the previous secret of the ring still verifies while gateways rotate');

  const gatewaySecret = await h.keys.add('gw-lisbon-01', ['b1'], 'test gateway');
  const perGateway = await postSigned(h, { readings: [peopleReading('b1', 'r2', h.clock.now, 3)] }, { keyId: 'gw-lisbon-01', secret: gatewaySecret });
  t.equal(perGateway.status, 200, 'a per-gateway key chosen by X-Key-Id');

  const sharedWithKeyId = await postSigned(h, { readings: [peopleReading('b1', 'r3', h.clock.now, 3)] }, { keyId: 'gw-lisbon-01' });
  t.equal(sharedWithKeyId.status, 403, 'with X-Key-Id, the shared key is not accepted');

  const unknownKey = await postSigned(h, { readings: [peopleReading('b1', 'r3', h.clock.now, 3)] }, { keyId: 'gw-nowhere', secret: gatewaySecret });
  t.equal(unknownKey.status, 403, 'an unknown key id');

  const oddKey = await postSigned(h, { readings: [peopleReading('b1', 'r3', h.clock.now, 3)] }, { keyId: "x' OR '1'='1", secret: gatewaySecret });
  t.equal(oddKey.status, 403, 'a key id outside the allowed characters');

  t.ok(await h.keys.revoke('gw-lisbon-01'));
  const revoked = await postSigned(h, { readings: [peopleReading('b1', 'r3', h.clock.now, 3)] }, { keyId: 'gw-lisbon-01', secret: gatewaySecret });
  t.equal(revoked.status, 403, 'a revoked key');
  t.equal(await countRows(h.pool, 'readings'), 2);
});

t.test('a repeated batchId answers the first result and stores nothing twice', async (t) => {
  const h = await startHarness(t);
  const now = h.clock.now;
  const batch = { batchId: 'gw1-000042', readings: [peopleReading('b1', 'r1', now, 7), peopleReading('b1', 'r2', now, 8)] };
  const first = await postSigned(h, batch);
  t.same(first.json, { accepted: 2 });

  const again = await postSigned(h, batch);
  t.equal(again.status, 200);
  t.same(again.json, { accepted: 2 }, 'the first result');

  const different = await postSigned(h, { batchId: 'gw1-000042', readings: [peopleReading('b1', 'r9', now, 1)] });
  t.same(different.json, { accepted: 2 }, 'same batch id, other content: still the first result');
  t.equal(await countRows(h.pool, 'readings'), 2, 'nothing stored twice');
  t.equal(await countRows(h.pool, 'ingest_batches'), 1);

  const racing = { batchId: 'gw1-000043', readings: Array.from({ length: 50 }, (_, i) => peopleReading('b2', `r${i}`, now, i)) };
  const answers = await Promise.all(Array.from({ length: 6 }, () => postSigned(h, racing)));
  t.same(answers.map((a) => a.status), [200, 200, 200, 200, 200, 200]);
  t.same(new Set(answers.map((a) => JSON.stringify(a.json))), new Set([JSON.stringify({ accepted: 50 })]));
  t.equal(await countRows(h.pool, 'readings'), 52, 'six concurrent copies of one batch are stored once');
  const metric = await h.metrics.batches.get();
  const count = (outcome: string) => metric.values.find((v) => v.labels.outcome === outcome)?.value;
  t.equal(count('accepted'), 2);
  t.equal(count('duplicate'), 7);
});

t.test('a reading already stored is not stored twice when sent without a batch id', async (t) => {
  const h = await startHarness(t);
  const reading = temperatureReading('b1', 'r1', h.clock.now, 20);
  t.equal((await postSigned(h, { readings: [reading] })).status, 200);
  t.equal((await postSigned(h, { readings: [reading, temperatureReading('b1', 'r1', h.clock.now + 1, 20)] })).status, 200);
  t.equal(await countRows(h.pool, 'readings'), 2, 'keyed (building_id, room_id, metric, ts)');
});

t.test('a batch repeating a stored reading under a new batch id keeps the stored copy and stores the rest', async (t) => {
  const h = await startHarness(t);
  const now = h.clock.now;
  t.equal((await postSigned(h, { batchId: 'first', readings: [temperatureReading('b1', 'r1', now, 20)] })).status, 200);
  const second = await postSigned(h, {
    batchId: 'second',
    readings: [temperatureReading('b1', 'r1', now + 1, 22), temperatureReading('b1', 'r1', now, 25), peopleReading('b1', 'r2', now, 3)],
  });
  t.equal(second.status, 200);
  t.same(second.json, { accepted: 3 }, 'the batch is accepted whole');
  const { rows } = await h.pool.query<{ metric: string; room_id: string; ms: string; value: number }>(
    `SELECT metric, room_id, (extract(epoch FROM ts) * 1000)::bigint::text AS ms, value FROM readings ORDER BY metric, room_id, ts`,
  );
  t.same(
    rows.map((r) => [r.metric, r.room_id, Number(r.ms) - now, r.value]),
    [
      ['peopleCount', 'r2', 0, 3],
      ['temperature', 'r1', 0, 20],
      ['temperature', 'r1', 1, 22],
    ],
    'the stored reading kept its first value; the new ones are stored once',
  );
  t.equal((await h.metrics.readings.get()).values[0]?.value, 3, 'readings stored counts rows actually written');
  const again = await postSigned(h, { batchId: 'second', readings: [temperatureReading('b1', 'r1', now + 2, 30)] });
  t.same(again.json, { accepted: 3 }, 'the second batch id is claimed too');
});

t.test('an id holding a lone surrogate is refused, not stored as U+FFFD', async (t) => {
  const h = await startHarness(t);
  const answer = await postSigned(h, { readings: [temperatureReading('b1', 'r\ud800', h.clock.now, 20, { sensorId: 'stat\udc00-1' }), temperatureReading('b1', 'r\ud83d\ude00', h.clock.now, 21)] });
  t.equal(answer.status, 400);
  t.same((answer.json as { errors: Array<{ index: number; field: string }> }).errors.map((e) => [e.index, e.field]), [
    [0, 'roomId'],
    [0, 'sensorId'],
  ], 'a whole pair (an emoji) is fine');
  t.equal(await countRows(h.pool, 'readings'), 0);
});

t.test('backslashes, COPY\'s \\N and quotes in text, and sub-millisecond timestamps, are stored exactly', async (t) => {
  const h = await startHarness(t);
  const now = h.clock.now;
  // Ids hold no control characters (tabs and line breaks are refused), so a backslash is what COPY's
  // text format must escape: `\N` unescaped would be read as NULL.
  const roomId = 'r\\N 1\\t"2\\';
  const answer = await postSigned(h, {
    readings: [temperatureReading('b\\1', roomId, now - 0.25, 20.125, { sensorId: 'stat\\x"é' }), temperatureReading('b\\1', roomId, now - 1.5, -0.5)],
  });
  t.equal(answer.status, 200);
  const { rows } = await h.pool.query<{ building_id: string; room_id: string; us: string; value: number; payload: Record<string, unknown> }>(
    "SELECT building_id, room_id, (extract(epoch FROM ts) * 1000000)::bigint::text AS us, value, payload FROM readings ORDER BY ts",
  );
  t.same(
    rows.map((r) => [r.building_id, r.room_id, r.value, r.payload]),
    [
      ['b\\1', roomId, -0.5, {}],
      ['b\\1', roomId, 20.125, { sensorId: 'stat\\x"é' }],
    ],
    'text round-trips through the COPY escaping',
  );
  const micros = (ms: number) => String(Math.round(ms * 1000));
  t.same(
    rows.map((r) => r.us),
    [micros(now - 1.5), micros(now - 0.25)],
    'the instant keeps its microseconds, as to_timestamp(ms / 1000.0) would',
  );
});

t.test('instants across hour and minute boundaries keep their exact microsecond', async (t) => {
  const h = await startHarness(t);
  const hour = Math.floor(h.clock.now / 3_600_000) * 3_600_000;
  const instants = [
    hour,
    hour - 1,
    hour - 0.5,
    hour - 0.0001, // rounds up into the next hour
    hour - 3_600_000 + 59_999.25,
    hour - 7_200_000 + 61_000,
    hour - 86_400_000 + 123.75,
    hour - 1000 + 0.125,
  ];
  const answer = await postSigned(h, { readings: instants.map((ts, i) => temperatureReading('b1', `r${i}`, ts, 20)) });
  t.equal(answer.status, 200);
  const { rows } = await h.pool.query<{ room_id: string; us: string }>("SELECT room_id, (extract(epoch FROM ts) * 1000000)::bigint::text AS us FROM readings");
  const stored = new Map(rows.map((r) => [r.room_id, r.us]));
  const micros = (ms: number) => String(BigInt(Math.floor(ms)) * 1000n + BigInt(Math.round((ms - Math.floor(ms)) * 1000)));
  t.same(
    instants.map((_, i) => stored.get(`r${i}`)),
    instants.map(micros),
  );
});

t.test('GET /contracts serves the catalog from the shared declarations', async (t) => {
  const h = await startHarness(t);
  const answer = await call(`${h.url}/contracts`, 'GET');
  t.equal(answer.status, 200);
  const catalog = answer.json as Array<{ key: string; actions: Array<{ name: string }>; bounds: unknown[]; fields: unknown[]; interfaceName: string }>;
  t.same(catalog.map((c) => c.key), ['temperature', 'peopleCount', 'airQuality', 'totalDeviceCount', 'ratioDeviceCount', 'zoneTransition', 'apClients']);
  t.same(catalog[0]?.actions.map((a) => a.name), ['setTarget', 'increase', 'decrease']);
  t.equal(catalog.find((c) => c.key === 'zoneTransition')?.interfaceName, 'IZoneTransition');
});

t.test('health and metrics', async (t) => {
  const h = await startHarness(t);
  t.same((await call(`${h.url}/health`, 'GET')).json, { status: 'ok' });
  await postSigned(h, { readings: [peopleReading('b1', 'r1', h.clock.now, 2)] });
  const metrics = await call(`${h.url}/metrics`, 'GET');
  t.match(metrics.text, /telemetry_ingest_batches_total\{outcome="accepted",service="telemetry"\} 1/);
  t.match(metrics.text, /telemetry_readings_stored_total\{service="telemetry"\} 1/);
});

t.test('the same reading twice in one batch, and overlapping batches in parallel, are stored once without deadlock', async (t) => {
  const h = await startHarness(t);
  const now = h.clock.now;
  const twice = await postSigned(h, { readings: [temperatureReading('b1', 'r1', now, 20), temperatureReading('b1', 'r1', now, 21)] });
  t.equal(twice.status, 200);
  t.equal(await countRows(h.pool, 'readings'), 1);

  const shared = Array.from({ length: 200 }, (_, i) => peopleReading('b2', `r${i % 20}`, now + i, i % 7));
  const orders = [shared, [...shared].reverse(), [...shared.slice(100), ...shared.slice(0, 100)], [...shared].sort((a, b) => a.roomId.localeCompare(b.roomId))];
  const answers = await Promise.all(orders.map((readings) => postSigned(h, { readings })));
  t.same(answers.map((a) => a.status), [200, 200, 200, 200]);
  t.equal(await countRows(h.pool, 'readings'), 201);
});

t.test('with Redis unreachable, readings are still stored and the failed publication is counted', async (t) => {
  const { Redis } = await import('ioredis');
  const { createIngestService } = await import('../../../cloud/telemetry/ingest.js');
  const { createRedisPublisher } = await import('../../../cloud/telemetry/broker/redis-publisher.js');
  const { createTelemetryMetrics } = await import('../../../cloud/telemetry/metrics.js');
  const { silentLogger } = await import('../../../shared/logger.js');
  const h = await startHarness(t);
  const dead = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
  t.teardown(() => dead.disconnect());
  const metrics = createTelemetryMetrics({ defaults: false });
  const ingest = createIngestService({ store: h.readings, publisher: createRedisPublisher(dead), metrics, logger: silentLogger(), clock: () => h.clock.now });
  t.same(await ingest.ingest(SHARED_KEY, { readings: [peopleReading('b1', 'r1', h.clock.now, 3)] }), { accepted: 1 });
  await ingest.drain();
  t.equal(await countRows(h.pool, 'readings'), 1);
  t.equal((await metrics.publishFailures.get()).values[0]?.value, 1);
});
