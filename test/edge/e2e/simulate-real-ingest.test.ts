/**
 * The edge's `simulate` (real SNMP agents and SSH servers on loopback, the real collector) posting to the
 * REAL telemetry ingest: the app of test/cloud/telemetry/support/harness.ts on a fresh PostgreSQL database,
 * publishing on the stack's Redis. No stand-in on the path: the gateway's batches are verified, validated,
 * stored and published by the service itself.
 *
 * Signing: a per-gateway key (`X-Key-Id: gw-simulated-building`), made in the service's `ingest_keys`
 * table through the harness's key store and bound to the simulated building's id (`simulated-building`)
 * only, as `keys-cli.ts add <keyId> --building <buildingId>` makes it. The shared key is not used.
 *
 * Checked against the database and Redis: every batch accepted (the simulate summary, the service's
 * HTTP answers and the accepted count it recorded per batch), one `ingest_batches` row per batch id, a
 * totalDeviceCount row per zone per tick equal to the count simulate printed, an apClients row per AP
 * that answered (one AP is made to reboot over the first ticks, so some do not), every posted reading
 * (the exact bodies, from the gateway's ledger) stored as one row, one raw Redis message per stored
 * reading, and no device MAC (in any spelling) nor device hash anywhere in the stored rows.
 */
import { subscribe as subscribeChannel, unsubscribe as unsubscribeChannel } from 'node:diagnostics_channel';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import t from 'tap';
import { countRows, startHarness, subscribe, until } from '../../cloud/telemetry/support/harness.js';
import { spellings } from '../support/cli-io.js';
import { runSimulate } from '../support/simulate-run.js';

const TICKS = 7;
const INTERVAL_MS = 2000;
const DEVICES = 24;
const BUILDING = 'simulated-building';
const KEY_ID = 'gw-simulated-building';

interface TickLine {
  tick: number;
  timestamp: number;
  counts: Record<string, number>;
  aps: Array<{ ap: string; ok: boolean; stations: number }>;
  batch: { batchId: string; readings: number; refused: number; delivery: string };
}

/** What the gateway's HTTP client reported of one answer to a request. */
interface Answer {
  method: string;
  url: string;
  status: number;
  contentType: string;
}

/** Node's `http.client.response.finish` diagnostics event. */
interface ResponseFinished {
  request: { method: string; protocol: string; path: string; getHeader(name: string): unknown };
  response: { statusCode?: number; headers: Record<string, string | string[] | undefined> };
}

t.test('simulate posts to the real telemetry ingest with a per-gateway key: every batch stored, published, and free of identifiers', async (t) => {
  const h = await startHarness(t);
  const secret = await h.keys.add(KEY_ID, [BUILDING], 'the simulated building gateway');

  // Every message on the harness's raw channel, from before the first post.
  const messages = await subscribe(t, h.redisUrl, [h.channels.raw]);

  // The service's HTTP answers, as the gateway's HTTP client (Node's own) received them.
  const answers: Answer[] = [];
  const onResponse = (message: unknown) => {
    const { request, response } = message as ResponseFinished;
    const url = `${request.protocol}//${String(request.getHeader('host'))}${request.path}`;
    if (url.startsWith(h.url)) answers.push({ method: request.method, url, status: response.statusCode ?? 0, contentType: String(response.headers['content-type'] ?? '') });
  };
  subscribeChannel('http.client.response.finish', onResponse);
  t.teardown(() => void unsubscribeChannel('http.client.response.finish', onResponse));

  const stateDir = t.testdir({});
  const { exitCode, summary, out, building, macsSeen } = await runSimulate(
    {
      intervalMs: INTERVAL_MS,
      ticks: TICKS,
      seed: 7,
      devices: DEVICES,
      accessPoints: 5,
      rebootRate: 0.1,
      ingest: { url: `${h.url}/ingest`, secret, keyId: KEY_ID },
      stateDir,
      output: 'json',
      devicesPerPerson: 1.5,
    },
    // One AP silent for the first ticks, so some batches lack its apClients reading.
    (started) => started.reboot(started.accessPoints[0]!.name, 3),
  );
  t.equal(exitCode, 0);
  t.ok(building, 'a building ran');

  const ticks = out.map((line) => JSON.parse(line) as Record<string, unknown>).filter((l) => 'tick' in l) as unknown as TickLine[];
  t.equal(ticks.length, TICKS, 'one JSON line per tick');
  t.equal(summary.ticks, TICKS);
  const zones = building!.zones.slice().sort();
  t.ok(zones.length >= 3, `${zones.length} zones`);

  // Accepted: by the gateway's account, by the service's HTTP answers, and by what the service recorded.
  t.same(summary.deliveries, { accepted: TICKS }, 'the summary counts every batch accepted');
  for (const tick of ticks) {
    t.equal(tick.batch.delivery, 'accepted', `tick ${tick.tick}: batch accepted`);
    t.equal(tick.batch.refused, 0, `tick ${tick.tick}: no reading refused by the edge's catalog check`);
  }
  t.equal(answers.length, TICKS, 'one answer from the service per batch');
  for (const [i, answer] of answers.entries()) {
    t.same({ method: answer.method, url: answer.url, status: answer.status }, { method: 'POST', url: `${h.url}/ingest`, status: 200 }, `batch ${i + 1}: the service answered 200`);
    t.match(answer.contentType, /^application\/json/, `batch ${i + 1}: with its JSON answer`);
  }
  const outcomes = Object.fromEntries((await h.metrics.batches.get()).values.map((v) => [String(v.labels.outcome), v.value]));
  t.match(outcomes, { accepted: TICKS, duplicate: 0, invalid: 0, bad_signature: 0, outside_buildings: 0, too_large: 0 }, 'the service counted every batch accepted, none otherwise');

  // ingest_batches: one row per batch id, under the gateway's key, holding the accepted count it answered.
  const { rows: batches } = await h.pool.query<{ key_id: string; batch_id: string; accepted: number }>('SELECT key_id, batch_id, accepted FROM ingest_batches ORDER BY batch_id');
  t.same(
    batches,
    ticks.map((tick) => ({ key_id: KEY_ID, batch_id: tick.batch.batchId, accepted: tick.batch.readings })).sort((a, b) => (a.batch_id < b.batch_id ? -1 : 1)),
    'one row per batch id, under the per-gateway key, with every reading of the batch accepted',
  );
  t.equal(new Set(ticks.map((tick) => tick.batch.batchId)).size, TICKS, 'every batch id is distinct');

  // readings: every posted reading (the exact bodies, from the gateway's ledger) is one row.
  const { rows: stored } = await h.pool.query<{ building_id: string; room_id: string; metric: string; ms: string; value: number; from_room: string | null }>(
    `SELECT building_id, room_id, metric, round(extract(epoch FROM ts) * 1000)::bigint AS ms, value, payload->>'fromRoomId' AS from_room
     FROM readings ORDER BY ts, metric, room_id`,
  );
  const ledger = new Database(join(stateDir, 'ledger.sqlite'), { readonly: true });
  const bodies = (ledger.prepare('SELECT body FROM ledger_entries ORDER BY seq').all() as Array<{ body: string }>).map((r) => JSON.parse(r.body) as { batchId: string; readings: Array<Record<string, unknown>> });
  ledger.close();
  t.same(bodies.map((b) => b.batchId), ticks.map((tick) => tick.batch.batchId), 'the ledger holds the posted batches, in tick order');
  const rowKey = (metric: unknown, room: unknown, from: unknown, ms: unknown, value: unknown) => `${String(metric)}|${String(room)}|${from == null ? '' : String(from)}|${Number(ms)}|${Number(value)}`;
  const posted = bodies.flatMap((b) => b.readings.map((r) => rowKey(r.type, r.roomId, r.fromRoomId, r.timestamp, r[String(r.type)])));
  const readingsTotal = ticks.reduce((n, tick) => n + tick.batch.readings, 0);
  t.equal(posted.length, readingsTotal, `the batches held ${readingsTotal} readings`);
  t.same(stored.map((r) => rowKey(r.metric, r.room_id, r.from_room, r.ms, r.value)).sort(), posted.sort(), 'every posted reading is stored, one row each');
  t.equal(stored.length, readingsTotal, `as many rows as readings accepted (${readingsTotal})`);
  t.equal(await h.metrics.readings.get().then((m) => m.values[0]?.value), readingsTotal, 'the service counted every accepted reading stored');
  t.ok(stored.every((r) => r.building_id === BUILDING), `every row is for ${BUILDING}`);

  // totalDeviceCount per zone per tick as simulate printed it; apClients per AP that answered.
  let answered = 0;
  let silent = 0;
  for (const tick of ticks) {
    const at = stored.filter((r) => Number(r.ms) === tick.timestamp);
    const totals = Object.fromEntries(at.filter((r) => r.metric === 'totalDeviceCount').map((r) => [r.room_id, r.value]));
    t.same(Object.keys(totals).sort(), zones, `tick ${tick.tick}: a totalDeviceCount row for every zone`);
    t.same(totals, tick.counts, `tick ${tick.tick}: each equal to the count simulate printed`);
    const apRows = Object.fromEntries(at.filter((r) => r.metric === 'apClients').map((r) => [r.room_id, r.value]));
    const up = tick.aps.filter((a) => a.ok);
    t.same(apRows, Object.fromEntries(up.map((a) => [a.ap, a.stations])), `tick ${tick.tick}: an apClients row for each AP that answered, with its stations`);
    answered += up.length;
    silent += tick.aps.length - up.length;
  }
  t.ok(answered > 0, `apClients rows over the run: ${answered}`);
  t.ok(silent > 0, `AP polls unanswered over the run, so without an apClients row: ${silent}`);
  t.equal(await countRows(h.pool, 'ingest_batches'), TICKS, 'no other batch row');

  // Redis: one message on the raw channel per stored reading. After drain() every publication has been
  // made; a marker published afterwards arrives after all of them (a subscriber gets a channel in order).
  await h.ingest.drain();
  const publisher = new Redis(h.redisUrl, { maxRetriesPerRequest: 1 });
  t.teardown(() => publisher.quit());
  const marker = { marker: `end-of-run-${Date.now()}` };
  await publisher.publish(h.channels.raw, JSON.stringify(marker));
  await until(() => messages.some((m) => (m.message as { marker?: string }).marker === marker.marker), 10_000, 'the end-of-run marker');
  const published = messages.slice(0, messages.findIndex((m) => (m.message as { marker?: string }).marker === marker.marker)).map((m) => m.message as Record<string, unknown>);
  t.equal(published.length, stored.length, `as many raw messages as readings stored (${stored.length})`);
  t.same(
    published.map((m) => rowKey(m.type, m.roomId, m.fromRoomId, m.timestamp, m[String(m.type)])).sort(),
    stored.map((r) => rowKey(r.metric, r.room_id, r.from_room, r.ms, r.value)).sort(),
    'the messages are the stored readings, one each',
  );

  // No identifier stored: every row of readings (ids and payloads) and of ingest_batches, as text.
  const { rows: dump } = await h.pool.query<{ text: string }>(
    `SELECT concat_ws(' ', building_id, room_id, metric, ts::text, value::text, payload::text) AS text FROM readings
     UNION ALL SELECT concat_ws(' ', key_id, batch_id, accepted::text) FROM ingest_batches
     UNION ALL SELECT payload::text FROM alert_outbox`,
  );
  const text = dump.map((r) => r.text).join('\n');
  t.ok(text.includes(BUILDING) && zones.every((z) => text.includes(z)), 'the dump holds the stored ids');
  const macs = new Set([...macsSeen, ...building!.deviceZones().keys()]);
  t.ok(macs.size >= DEVICES, `${macs.size} device MACs known to the test`);
  const leaks: string[] = [];
  for (const mac of macs) for (const form of spellings(mac)) if (text.includes(form)) leaks.push(form);
  t.same(leaks, [], 'no MAC of any device in any spelling in any stored row');
  const db = new Database(join(stateDir, 'zones.sqlite'), { readonly: true });
  const ids = (db.prepare('SELECT device_id FROM tracked_devices').all() as Array<{ device_id: string }>).map((r) => r.device_id);
  db.close();
  t.ok(ids.length > 0, `${ids.length} device hashes known to the gateway`);
  t.equal(ids.filter((id) => text.includes(id) || text.includes(id.slice(0, 16))).length, 0, 'no device hash (or a prefix of one) in any stored row');
});
