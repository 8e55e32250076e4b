import net from 'node:net';
import t, { type Test } from 'tap';
import { sign } from '../../../shared/hmac.js';
import { SHARED_SECRET, call, countRows, peopleReading, postSigned, startHarness, temperatureReading, type Harness } from './support/harness.js';

/** After each rejection: nothing stored, and a valid batch right after is accepted. */
async function stillServing(t: Test, h: Harness, stored: number): Promise<void> {
  t.equal(await countRows(h.pool, 'readings'), stored, 'nothing was stored');
  t.equal(await countRows(h.pool, 'alert_outbox'), 0, 'no alert was queued');
  const ok = await postSigned(h, { readings: [peopleReading('ok', 'r1', h.clock.now - Math.floor(Math.random() * 1e6), 3)] });
  t.equal(ok.status, 200, 'the service keeps serving');
  await h.pool.query("DELETE FROM readings WHERE building_id = 'ok'");
}

/** Sends raw bytes on a socket: headers claiming `declared` bytes, then fewer, then half-closes. */
function sendTruncated(url: string, declared: number, bytes: Buffer, signature: string): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => {
      socket.write(
        `POST /ingest HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${declared}\r\nx-signature: ${signature}\r\nconnection: close\r\n\r\n`,
      );
      socket.write(bytes);
      socket.end();
    });
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString('utf8')));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

t.test('a truncated body is 400 and stores nothing', async (t) => {
  const h = await startHarness(t);
  const full = JSON.stringify({ readings: [temperatureReading('b1', 'r1', h.clock.now, 21)] });
  const cut = full.slice(0, full.length - 7);

  const signedCut = await call(`${h.url}/ingest`, 'POST', cut, { 'content-type': 'application/json', 'x-signature': sign(cut, SHARED_SECRET) });
  t.equal(signedCut.status, 400, 'cut JSON, signed as sent: malformed');
  t.match(signedCut.json, { type: 'Validation Error', message: /not valid JSON/ });
  t.same((signedCut.json as { errors: unknown }).errors, [{ index: null, field: '(body)', message: 'not valid JSON' }], 'the ingest 400 shape, errors included');
  const empty = await call(`${h.url}/ingest`, 'POST', '', { 'content-type': 'application/json', 'x-signature': sign('', SHARED_SECRET) });
  t.equal(empty.status, 400, 'an empty signed body is not a batch');
  t.same((empty.json as { errors: unknown }).errors, [{ index: null, field: '(body)', message: 'empty body' }]);

  const signedWhole = await call(`${h.url}/ingest`, 'POST', cut, { 'content-type': 'application/json', 'x-signature': sign(full, SHARED_SECRET) });
  t.equal(signedWhole.status, 403, 'cut in transit, signed whole: the signature no longer matches');

  const raw = await sendTruncated(h.url, full.length, Buffer.from(cut), sign(full, SHARED_SECRET));
  // Node's HTTP parser answers this one itself, before the app sees a request.
  t.match(raw, /^HTTP\/1\.1 400 /, 'fewer bytes than Content-Length, then the connection closes: 400');
  await stillServing(t, h, 0);
});

t.test('a body that is not UTF-8 is a 400, signed as sent, and stores nothing', async (t) => {
  const h = await startHarness(t);
  const reading = (building: string) => JSON.stringify(temperatureReading(building, 'r1', h.clock.now, 21));
  // Two building ids that differ only in bytes that are not UTF-8: decoded leniently, both would be "b\ufffd".
  for (const bad of [Buffer.from([0xff]), Buffer.from([0xc3, 0x28])]) {
    const [before, after] = reading('b#').split('#') as [string, string];
    const body = Buffer.concat([Buffer.from(`{"readings":[${before}`), bad, Buffer.from(`${after}]}`)]);
    const answer = await call(`${h.url}/ingest`, 'POST', body, { 'content-type': 'application/json', 'x-signature': sign(body, SHARED_SECRET) });
    t.equal(answer.status, 400, answer.text);
    t.same((answer.json as { errors: unknown }).errors, [{ index: null, field: '(body)', message: 'not valid UTF-8' }]);
  }
  await stillServing(t, h, 0);
});

t.test('a compressed body is a 400 in the ingest shape, counted invalid, and stores nothing', async (t) => {
  const h = await startHarness(t);
  const body = Buffer.from(JSON.stringify({ readings: [temperatureReading('b1', 'r1', h.clock.now, 21)] }));
  for (const encoding of ['gzip', 'br']) {
    const answer = await call(`${h.url}/ingest`, 'POST', body, { 'content-type': 'application/json', 'content-encoding': encoding, 'x-signature': sign(body, SHARED_SECRET) });
    t.equal(answer.status, 400, encoding);
    t.same(answer.json, { type: 'Validation Error', message: 'unsupported body encoding', errors: [{ index: null, field: '(body)', message: 'unsupported body encoding' }] }, encoding);
  }
  const metrics = await call(`${h.url}/metrics`, 'GET');
  t.match(metrics.text, /telemetry_ingest_batches_total\{outcome="invalid"[^}]*\} 2\b/, 'both counted as invalid batches');
  await stillServing(t, h, 0);
});

t.test('NaN, Infinity, a negative count and a missing field are each a 400 naming the reading and field', async (t) => {
  const h = await startHarness(t);
  const now = h.clock.now;
  const good = temperatureReading('b1', 'r1', now, 21);

  const nanText = `{"readings":[${JSON.stringify(good)},{"type":"temperature","buildingId":"b1","roomId":"r1","timestamp":${now},"temperature":NaN}]}`;
  const nan = await postSigned(h, nanText);
  t.equal(nan.status, 400, 'NaN is not JSON');
  t.match(nan.json, { type: 'Validation Error' });

  const infText = `{"readings":[${JSON.stringify(good)},{"type":"temperature","buildingId":"b1","roomId":"r1","timestamp":${now + 1},"temperature":1e999}]}`;
  const inf = await postSigned(h, infText);
  t.equal(inf.status, 400, '1e999 parses as Infinity and is refused');
  t.same(inf.json, {
    errors: [{ index: 1, field: 'temperature', message: 'expected a finite number, got Infinity' }],
    type: 'Validation Error',
    message: '1 of 2 readings are invalid; nothing was stored',
  });

  const nanString = await postSigned(h, { readings: [{ ...good, temperature: 'NaN' }] });
  t.match(nanString.json, { errors: [{ index: 0, field: 'temperature', message: 'expected a finite number, got "NaN"' }] });

  const negative = await postSigned(h, { readings: [good, peopleReading('b1', 'r1', now, -1)] });
  t.equal(negative.status, 400);
  t.match(negative.json, { errors: [{ index: 1, field: 'peopleCount', message: /non-negative integer, got -1/ }] });

  const fractional = await postSigned(h, { readings: [peopleReading('b1', 'r1', now, 2.5)] });
  t.equal(fractional.status, 400, 'a count is an integer');

  const { roomId: _omitted, ...noRoom } = good;
  const missing = await postSigned(h, { readings: [good, noRoom] });
  t.equal(missing.status, 400);
  t.match(missing.json, { errors: [{ index: 1, field: 'roomId', message: /required/ }] });

  const unregistered = await postSigned(h, { readings: [{ type: 'radiation', buildingId: 'b1', roomId: 'r1', timestamp: now, radiation: 1 }] });
  t.equal(unregistered.status, 400, 'an unregistered type');
  t.match(unregistered.json, { errors: [{ index: 0, field: 'type', message: /unregistered metric "radiation"/ }] });

  // PostgreSQL text and jsonb cannot hold NUL: refused as bad input, not failed in the store.
  const nul = await postSigned(h, { readings: [good, temperatureReading('b1', 'r\u00001', now + 2, 21, { sensorId: 's\u0000' })] });
  t.equal(nul.status, 400, 'NUL in a string field');
  t.same((nul.json as { errors: Array<{ index: number; field: string }> }).errors.map((e) => [e.index, e.field]), [
    [1, 'roomId'],
    [1, 'sensorId'],
  ]);
  t.match(nul.json, { errors: [{ message: /without NUL \(\\u0000\)/ }] });
  // Nor any other control character: the relay could not route such a building id to a browser, and
  // line breaks and tabs in ids break logs and room names.
  const control = await postSigned(h, {
    readings: [good, temperatureReading('b\n1', 'r1', now + 3, 21), temperatureReading('b1', 'r\t1', now + 4, 21), temperatureReading('b1', 'r1', now + 5, 21, { sensorId: 's\u2028' })],
  });
  t.equal(control.status, 400, 'control characters in ids');
  t.same((control.json as { errors: Array<{ index: number; field: string }> }).errors.map((e) => [e.index, e.field]), [
    [1, 'buildingId'],
    [2, 'roomId'],
    [3, 'sensorId'],
  ]);
  t.match(control.json, { errors: [{ message: /other control characters or lone surrogates, got "b\\n1"/ }] });
  const nulBatchId = await postSigned(h, { batchId: 'b\u0000x', readings: [good] });
  t.match(nulBatchId, { status: 400, json: { errors: [{ index: null, field: 'batchId', message: /without NUL/ }] } });

  const smuggled = await postSigned(h, { readings: [{ ...good, mac: 'aa:bb:cc:dd:ee:ff' }] });
  t.equal(smuggled.status, 400, 'an undeclared field (say, a device identifier) is refused');

  const ancient = await postSigned(h, { readings: [temperatureReading('b1', 'r1', now - 15 * 86_400_000, 21)] });
  t.match(ancient.json, { errors: [{ index: 0, field: 'timestamp', message: /older than the 14-day raw retention/ }] });
  const seconds = await postSigned(h, { readings: [temperatureReading('b1', 'r1', Math.floor(now / 1000), 21)] });
  t.equal(seconds.status, 400, 'a timestamp in seconds rather than ms is far in the past');
  const future = await postSigned(h, { readings: [temperatureReading('b1', 'r1', now + 3 * 86_400_000, 21)] });
  t.match(future.json, { errors: [{ index: 0, field: 'timestamp', message: /ahead of the service's clock/ }] });

  const envelope = await postSigned(h, { batchId: '', readings: 'lots', extra: true });
  t.equal(envelope.status, 400);
  t.same(
    (envelope.json as { errors: Array<{ field: string }> }).errors.map((e) => e.field).sort(),
    ['batchId', 'extra', 'readings'],
  );
  t.equal((await postSigned(h, { readings: [] })).status, 400, 'an empty batch');
  t.equal((await postSigned(h, '[1,2]')).status, 400, 'not an object');
  t.equal((await postSigned(h, '')).status, 400, 'an empty signed body');
  await stillServing(t, h, 0);
});

t.test('6,000 readings in one batch is 413', async (t) => {
  const h = await startHarness(t);
  const readings = Array.from({ length: 6000 }, (_, i) => peopleReading('b1', `r${i}`, h.clock.now, 1));
  const answer = await postSigned(h, { readings });
  t.equal(answer.status, 413);
  t.match(answer.json, { type: 'Payload Too Large', message: 'a batch holds at most 5000 readings, got 6000' });
  const exactly = await postSigned(h, { readings: readings.slice(0, 5000) });
  t.equal(exactly.status, 200, '5,000 is still one batch');
  t.equal(await countRows(h.pool, 'readings'), 5000);
  await h.pool.query('DELETE FROM readings');
  await stillServing(t, h, 0);
});

t.test('a 6 MiB body is 413, before any parsing', async (t) => {
  const h = await startHarness(t);
  const padding = 'x'.repeat(6 * 1024 * 1024);
  const body = JSON.stringify({ readings: [temperatureReading('b1', 'r1', h.clock.now, 21, { sensorId: padding })] });
  const answer = await postSigned(h, body);
  t.equal(answer.status, 413);
  t.match(answer.json, { type: 'Payload Too Large' });
  const unsigned = await call(`${h.url}/ingest`, 'POST', body, { 'content-type': 'application/json', 'x-signature': '0'.repeat(64) });
  t.equal(unsigned.status, 413, 'oversize is refused while reading, whatever the signature');
  await stillServing(t, h, 0);
});

t.test('a batch with one bad reading stores none of the good ones and queues no alert', async (t) => {
  const h = await startHarness(t);
  await h.pool.query(`INSERT INTO thresholds (building_id, room_id, metric, bounds) VALUES ('b1', NULL, 'temperature', '{"maxTemperature": 25}')`);
  const now = h.clock.now;
  const answer = await postSigned(h, { readings: [temperatureReading('b1', 'r1', now, 30), temperatureReading('b1', 'r2', now, 31), peopleReading('b1', 'r1', now, -3)] });
  t.equal(answer.status, 400);
  await stillServing(t, h, 0);
  t.equal(h.nudges.count, 0, 'the relay was not nudged');
});
