/**
 * Per-gateway ingest keys are confined to their buildings: a batch signed with a key that holds a
 * reading for any other building is refused whole (403), so one gateway's key cannot write readings,
 * raise alerts or push live telemetry into another tenant's building. The shared key is unchanged.
 */
import { readdir } from 'node:fs/promises';
import t from 'tap';
import { MIGRATIONS_DIR, migrate } from '../../../cloud/telemetry/store/migrate.js';
import { poolMigratedBefore } from './support/database.js';
import { countRows, postSigned, startHarness, subscribe, temperatureReading, until, type Harness } from './support/harness.js';

async function batchOutcomes(h: Harness): Promise<Record<string, number>> {
  const metric = await h.metrics.batches.get();
  return Object.fromEntries(metric.values.map((v) => [String(v.labels.outcome), v.value]));
}

/** Every temperature above 25 °C breaches, in both buildings, so a stored reading would queue an alert. */
async function breachAbove25(h: Harness, buildings: string[]): Promise<void> {
  for (const building of buildings) {
    await h.pool.query(`INSERT INTO thresholds (building_id, room_id, metric, bounds) VALUES ($1, NULL, 'temperature', '{"maxTemperature": 25}')`, [building]);
  }
}

t.test('a key bound to b1 ingests b1 readings; one b2 reading among them refuses the whole batch', async (t) => {
  const h = await startHarness(t);
  await breachAbove25(h, ['b1', 'b2']);
  const messages = await subscribe(t, h.redisUrl, [h.channels.raw, `${h.channels.filteredPrefix}b1`, `${h.channels.filteredPrefix}b2`]);
  const secret = await h.keys.add('gw-b1', ['b1'], 'b1 gateway');
  const now = h.clock.now;

  const first = [temperatureReading('b1', 'r1', now - 1000, 20)];
  const own = await postSigned(h, { batchId: 'batch-1', readings: first }, { keyId: 'gw-b1', secret });
  t.equal(own.status, 200, 'its own building');
  t.same(own.json, { accepted: 1 });

  const mixed = [temperatureReading('b1', 'r1', now, 26), temperatureReading('b1', 'r2', now, 27), temperatureReading('b2', 'r1', now, 30), temperatureReading('b1', 'r3', now, 21)];
  const refused = await postSigned(h, { batchId: 'batch-2', readings: mixed }, { keyId: 'gw-b1', secret });
  t.equal(refused.status, 403);
  t.match(refused.contentType, /^application\/json/);
  t.same(refused.json, {
    type: 'Forbidden',
    message: 'key gw-b1 may not write building "b2" (reading 2); nothing was stored',
    errors: [{ index: 2, field: 'buildingId', message: 'building "b2" is not one of the buildings of key gw-b1' }],
  });
  t.notMatch(refused.text, secret, 'no secret in the answer');
  t.equal(await countRows(h.pool, 'readings'), 1, 'none of the batch is stored, not even its b1 readings');
  t.equal(await countRows(h.pool, 'alert_outbox'), 0, 'no alert queued, though three readings breach');
  t.equal(h.nudges.count, 0, 'the relay is not nudged');
  t.equal(await countRows(h.pool, 'ingest_batches'), 1, 'the refused batch id is not claimed');
  t.match(await batchOutcomes(h), { accepted: 1, outside_buildings: 1, bad_signature: 0, invalid: 0 }, 'counted as outside_buildings, not as a bad signature');

  // The gateway fixed, it resends the batch id: accepted, so the refusal claimed nothing.
  const fixed = mixed.filter((r) => r.buildingId === 'b1');
  const resent = await postSigned(h, { batchId: 'batch-2', readings: fixed }, { keyId: 'gw-b1', secret });
  t.same(resent.json, { accepted: 3 });
  t.equal(await countRows(h.pool, 'alert_outbox'), 2, 'the b1 breaches alert once they are accepted');

  // Publications keep batch order: had the refused batch published, its messages would come first.
  await until(() => messages.filter((m) => m.channel === h.channels.raw).length >= 4, 5000, 'the accepted readings');
  await new Promise((r) => setTimeout(r, 100));
  t.same(messages.filter((m) => m.channel === h.channels.raw).map((m) => m.message), [...first, ...fixed], 'telemetry:raw carries only accepted batches');
  t.same(messages.filter((m) => m.channel === `${h.channels.filteredPrefix}b2`), [], 'nothing reaches b2 live');
});

t.test('every reading outside the key is named; the refusal comes before validation and repeats', async (t) => {
  const h = await startHarness(t);
  const secret = await h.keys.add('gw-b1', ['b1', 'b1-annex']);
  const now = h.clock.now;
  const readings = [temperatureReading('b2', 'r1', now, 20), temperatureReading('b1-annex', 'r1', now, 20), temperatureReading('b3', 'r1', now, 20), { type: 'temperature', buildingId: 'b2', roomId: 'r2' }];
  const answer = await postSigned(h, { readings }, { keyId: 'gw-b1', secret });
  t.equal(answer.status, 403, 'a reading that would fail validation does not turn the refusal into a 400');
  t.match(answer.json, {
    message: '3 of 4 readings are for buildings key gw-b1 may not write (first: reading 0, building "b2"); nothing was stored',
    errors: [{ index: 0 }, { index: 2, message: /"b3"/ }, { index: 3 }],
  });
  t.equal((answer.json as { errors: unknown[] }).errors.length, 3);
  t.notMatch(answer.text, /b1-annex/, 'the answer never lists the key\'s own buildings');

  const long = await postSigned(h, { readings: [temperatureReading('b'.repeat(5000), 'r1', now, 20)] }, { keyId: 'gw-b1', secret });
  t.equal(long.status, 403);
  t.ok(long.text.length < 600, 'a long building id is quoted shortened, not echoed whole');

  const stored = await postSigned(h, { batchId: 'only-b1', readings: [temperatureReading('b1', 'r1', now, 20)] }, { keyId: 'gw-b1', secret });
  t.equal(stored.status, 200);
  const replay = await postSigned(h, { batchId: 'only-b1', readings: [temperatureReading('b2', 'r1', now, 20)] }, { keyId: 'gw-b1', secret });
  t.equal(replay.status, 403, 'a stored batch id does not carry another building in as a "duplicate"');
  t.equal(await countRows(h.pool, 'readings'), 1);

  const forged = await postSigned(h, { readings: [temperatureReading('b1', 'r1', now + 1, 20)] }, { keyId: 'gw-b1', secret: 'not-the-gateway-secret-at-all' });
  t.equal(forged.status, 403);
  t.equal(forged.text, 'invalid signature', 'a bad signature is still the plain 403');
  t.match(await batchOutcomes(h), { outside_buildings: 3, bad_signature: 1, accepted: 1 });
});

t.test('the shared key, without X-Key-Id, still writes any building', async (t) => {
  const h = await startHarness(t);
  await h.keys.add('gw-b1', ['b1']);
  const now = h.clock.now;
  const answer = await postSigned(h, { readings: [temperatureReading('b1', 'r1', now, 20), temperatureReading('b2', 'r1', now, 20), temperatureReading('b9', 'r1', now, 20)] });
  t.equal(answer.status, 200);
  t.same(answer.json, { accepted: 3 });
  t.match(await batchOutcomes(h), { accepted: 1, outside_buildings: 0 });
});

t.test('bind replaces a key\'s buildings and keeps its secret; a revoked key comes back only with buildings', async (t) => {
  const h = await startHarness(t);
  const secret = await h.keys.add('gw-1', ['b1']);
  const now = h.clock.now;
  const post = (buildingId: string, ts: number, key = secret) => postSigned(h, { readings: [temperatureReading(buildingId, 'r1', ts, 20)] }, { keyId: 'gw-1', secret: key });
  t.equal((await post('b2', now)).status, 403);
  t.ok(await h.keys.bind('gw-1', ['b2', 'b3']));
  t.equal((await post('b2', now)).status, 200, 'the same secret now writes b2');
  t.equal((await post('b1', now)).status, 403, 'and no longer b1');
  t.same(await h.keys.activeKey('gw-1'), { secret, buildingIds: ['b2', 'b3'] });
  t.notOk(await h.keys.bind('gw-none', ['b1']), 'no such key');

  t.ok(await h.keys.revoke('gw-1'));
  t.notOk(await h.keys.bind('gw-1', ['b1']), 'a revoked key cannot be rebound');
  await t.rejects(h.keys.add('gw-1', []), /name at least one building/, 'nor re-added without buildings');
  const renewed = await h.keys.add('gw-1', ['b4']);
  t.not(renewed, secret);
  t.equal((await post('b4', now + 1, renewed)).status, 200);
  t.equal((await post('b2', now + 1, renewed)).status, 403, 're-adding replaces the buildings too');
  t.match(await h.keys.list(), [{ keyId: 'gw-1', buildingIds: ['b4'], revokedAt: null }]);
});

t.test('bad building lists are refused with every problem named, and store nothing', async (t) => {
  const h = await startHarness(t);
  await t.rejects(h.keys.add('gw-1', []), { message: 'buildings: name at least one building the key may write' });
  const err = (await h.keys.add('gw-1', ['b1', '', ' b2', 'b1', 'x'.repeat(257), 'a\u0000b', 'b\t3']).catch((e: unknown) => e)) as Error;
  t.same(err.message.split('\n'), [
    'buildings[1]: expected a building id, got an empty string',
    'buildings[2]: " b2" has surrounding whitespace; building ids are matched exactly',
    'buildings[3]: "b1" is already named at buildings[0]',
    'buildings[4]: a building id has at most 256 characters, got 257',
    'buildings[5]: "a\\u0000b" holds NUL (\\u0000), which no reading\'s building id can',
    'buildings[6]: "b\\t3" holds a control character, which no reading\'s building id can',
  ]);
  t.same(await h.keys.list(), [], 'nothing stored');
  await h.keys.add('gw-1', ['b1']);
  await t.rejects(h.keys.bind('gw-1', ['b1', 'b1']), /buildings\[1\]: "b1" is already named/);
  t.same((await h.keys.activeKey('gw-1'))?.buildingIds, ['b1'], 'a refused bind changes nothing');
  await t.rejects(h.pool.query("UPDATE ingest_keys SET building_ids = ARRAY['b1', NULL]"), { code: '23514' }, 'the table refuses a NULL building');
  await t.rejects(h.pool.query("UPDATE ingest_keys SET building_ids = ARRAY['']"), { code: '23514' }, 'and an empty one');
});

t.test('migration 0004: keys made before it keep writing any building; rows added by hand later write none', async (t) => {
  // The schema as deployed before keys named buildings.
  const pool = await poolMigratedBefore(t, '0004');
  await pool.query("INSERT INTO ingest_keys (key_id, secret, note) VALUES ('gw-old', 'old-gateway-secret-0123', 'made before 0004')");

  const upgrade = (await readdir(MIGRATIONS_DIR)).filter((f) => f >= '0004' && f.endsWith('.sql')).map((f) => f.replace(/\.sql$/, '')).sort();
  t.equal(upgrade[0], '0004_ingest_key_buildings');
  t.same(await migrate(pool), upgrade, '0004 and every migration after it');
  const h = await startHarness(t, { pool });
  t.same(await h.keys.activeKey('gw-old'), { secret: 'old-gateway-secret-0123', buildingIds: null }, 'no building list: any building');
  t.same(await h.keys.unboundKeyIds(), ['gw-old']);
  const now = h.clock.now;
  const old = await postSigned(h, { readings: [temperatureReading('b1', 'r1', now, 20), temperatureReading('b2', 'r1', now, 20)] }, { keyId: 'gw-old', secret: 'old-gateway-secret-0123' });
  t.equal(old.status, 200, 'the old gateway keeps working after the upgrade');

  await pool.query("INSERT INTO ingest_keys (key_id, secret) VALUES ('gw-by-hand', 'hand-made-secret-0123')");
  t.same((await h.keys.activeKey('gw-by-hand'))?.buildingIds, [], 'a row inserted without building_ids gets none, not any');
  const byHand = await postSigned(h, { readings: [temperatureReading('b1', 'r1', now + 1, 20)] }, { keyId: 'gw-by-hand', secret: 'hand-made-secret-0123' });
  t.equal(byHand.status, 403);
  t.match(byHand.json, { message: /key gw-by-hand may not write building "b1"/ });

  await h.keys.bind('gw-old', ['b1']);
  t.same(await h.keys.unboundKeyIds(), [], 'bound, it is no longer reported');
  const confined = await postSigned(h, { readings: [temperatureReading('b2', 'r1', now + 2, 20)] }, { keyId: 'gw-old', secret: 'old-gateway-secret-0123' });
  t.equal(confined.status, 403, 'and it writes only its buildings');
  t.equal(await countRows(pool, 'readings'), 2);
});
