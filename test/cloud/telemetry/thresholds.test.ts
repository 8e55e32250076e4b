import t from 'tap';
import { PgBuildingStore } from '../../../cloud/telemetry/store/buildings.js';
import { callAs, countRows, postSigned, startHarness, temperatureReading, type Harness } from './support/harness.js';

const manager = { sub: 'u-fm', accountName: 'fm@acme.test', memberships: [{ domainName: 'acme', role: 'facility_manager' }] };
const viewer = { sub: 'u-viewer', accountName: 'v@acme.test', memberships: [{ domainName: 'acme', role: 'viewer' }] };
const outsider = { sub: 'u-out', accountName: 'o@other.test', memberships: [{ domainName: 'other', role: 'business_admin' }] };
const admin = { sub: 'u-admin', accountName: 'root@lintel.test', memberships: [{ domainName: 'lintel', role: 'admin' }] };
const system = { sub: 'system:digital-twin' };

async function thresholdRows(h: Harness) {
  const { rows } = await h.pool.query('SELECT room_id, metric, bounds FROM thresholds ORDER BY metric, room_id NULLS FIRST');
  return rows as Array<{ room_id: string | null; metric: string; bounds: Record<string, number> }>;
}

t.test('PATCH sets bounds per room, null clears one, others are left as they are', async (t) => {
  const h = await startHarness(t);
  h.directory.set('b1', ['acme']);
  const first = await callAs(h, manager, 'PATCH', '/thresholds/temperature/buildings/b1/rooms', {
    r1: { maxTemperature: 26, maxHumidity: 70 },
    r2: { maxTemperature: 24 },
  });
  t.equal(first.status, 200);
  t.same(first.json, { buildingId: 'b1', metric: 'temperature', rooms: { r1: { maxTemperature: 26, maxHumidity: 70 }, r2: { maxTemperature: 24 } } });

  const second = await callAs(h, manager, 'PATCH', '/thresholds/temperature/buildings/b1/rooms', { r1: { maxHumidity: null, maxTemperature: 27 } });
  t.same(second.json, { buildingId: 'b1', metric: 'temperature', rooms: { r1: { maxTemperature: 27 } } });
  t.same(await thresholdRows(h), [
    { room_id: 'r1', metric: 'temperature', bounds: { maxTemperature: 27 } },
    { room_id: 'r2', metric: 'temperature', bounds: { maxTemperature: 24 } },
  ]);
  t.equal(h.directory.calls[0]?.buildingId, 'b1');
  t.ok(h.directory.calls[0]?.claims, 'the caller claims are forwarded to the directory');
  t.same(h.directory.unexpected, []);
});

t.test('a room named like an object key of JavaScript is a room like any other', async (t) => {
  const h = await startHarness(t);
  h.directory.set('b1', ['acme']);
  // JSON.parse makes "__proto__" an own key, as it is in the request body.
  const body = JSON.parse('{"__proto__": {"maxTemperature": 21}, "constructor": {"maxTemperature": 22}}') as Record<string, unknown>;
  const answer = await callAs(h, manager, 'PATCH', '/thresholds/temperature/buildings/b1/rooms', body);
  t.equal(answer.status, 200);
  t.same(Object.entries((answer.json as { rooms: object }).rooms), [
    ['__proto__', { maxTemperature: 21 }],
    ['constructor', { maxTemperature: 22 }],
  ], 'both rooms answered');
  t.same(await thresholdRows(h), [
    { room_id: '__proto__', metric: 'temperature', bounds: { maxTemperature: 21 } },
    { room_id: 'constructor', metric: 'temperature', bounds: { maxTemperature: 22 } },
  ]);
});

t.test('a patch where one of three rooms is bad is 400 and stores nothing', async (t) => {
  const h = await startHarness(t);
  h.directory.set('b1', ['acme']);
  await callAs(h, manager, 'PATCH', '/thresholds/temperature/buildings/b1/rooms', { r1: { maxTemperature: 26 } });
  const before = await thresholdRows(h);

  const bad = await callAs(h, manager, 'PATCH', '/thresholds/temperature/buildings/b1/rooms', {
    r1: { maxTemperature: 20 },
    r2: { maxTemperature: 'hot' },
    r3: { maxTemperature: 22 },
  });
  t.equal(bad.status, 400);
  t.same(bad.json, {
    errors: [{ room: 'r2', field: 'maxTemperature', message: 'expected a finite number or null, got "hot"' }],
    type: 'Validation Error',
    message: '1 of 3 rooms have invalid bounds; nothing was stored',
  });
  t.same(await thresholdRows(h), before, 'r1 and r3 were not written either');

  const unknownBound = await callAs(h, manager, 'PATCH', '/thresholds/temperature/buildings/b1/rooms', { r1: { maxCo2: 900 }, r2: {}, r3: [] });
  t.equal(unknownBound.status, 400);
  t.same(
    (unknownBound.json as { errors: Array<{ room: string }> }).errors.map((e) => e.room),
    ['r1', 'r2', 'r3'],
    'a bound of another metric, no bound, and not an object: every problem listed',
  );
  t.equal((await callAs(h, manager, 'PATCH', '/thresholds/temperature/buildings/b1/rooms', {})).status, 400, 'no room at all');
  t.equal((await callAs(h, manager, 'PATCH', '/thresholds/radiation/buildings/b1/rooms', { r1: {} })).status, 404, 'an unknown metric');
  t.same(await thresholdRows(h), before);

  const ok = await callAs(h, manager, 'PATCH', '/thresholds/temperature/buildings/b1/rooms', { r1: { maxTemperature: 23 } });
  t.equal(ok.status, 200, 'the service keeps serving');
});

t.test('PUT sets building-level bounds for several metrics', async (t) => {
  const h = await startHarness(t);
  h.directory.set('b1', ['acme']);
  const put = await callAs(h, manager, 'PUT', '/thresholds/buildings/b1', { temperature: { maxTemperature: 28 }, airQuality: { maxCo2: 1000, maxPm25: 25 } });
  t.equal(put.status, 200);
  t.same(put.json, { buildingId: 'b1', thresholds: { temperature: { maxTemperature: 28 }, airQuality: { maxCo2: 1000, maxPm25: 25 } } });
  const clear = await callAs(h, manager, 'PUT', '/thresholds/buildings/b1', { airQuality: { maxPm25: null } });
  t.same(clear.json, { buildingId: 'b1', thresholds: { airQuality: { maxCo2: 1000 } } });
  t.same(await thresholdRows(h), [
    { room_id: null, metric: 'airQuality', bounds: { maxCo2: 1000 } },
    { room_id: null, metric: 'temperature', bounds: { maxTemperature: 28 } },
  ]);
  const bad = await callAs(h, manager, 'PUT', '/thresholds/buildings/b1', { temperature: { maxTemperature: 1 }, radiation: { max: 1 } });
  t.equal(bad.status, 400);
  t.match(bad.json, { errors: [{ metric: 'radiation', field: '(metric)' }] });
  t.same((await thresholdRows(h)).find((r) => r.metric === 'temperature')?.bounds, { maxTemperature: 28 }, 'nothing of the bad PUT stored');
});

t.test('only callers who may edit the building change thresholds', async (t) => {
  const h = await startHarness(t);
  h.directory.set('b1', ['acme']);
  h.directory.set('b-broken', { status: 503 });
  const body = { r1: { maxTemperature: 26 } };
  t.equal((await callAs(h, viewer, 'PATCH', '/thresholds/temperature/buildings/b1/rooms', body)).status, 403, 'a viewer reads only');
  t.equal((await callAs(h, outsider, 'PUT', '/thresholds/buildings/b1', { temperature: { maxTemperature: 1 } })).status, 403, 'a manager of another domain');
  t.equal(await countRows(h.pool, 'thresholds'), 0);
  t.equal((await callAs(h, admin, 'PATCH', '/thresholds/temperature/buildings/b1/rooms', body)).status, 200, 'a platform admin');
  t.equal((await callAs(h, system, 'PATCH', '/thresholds/temperature/buildings/b1/rooms', body)).status, 200, 'a system subject');
  const broken = await callAs(h, manager, 'PATCH', '/thresholds/temperature/buildings/b-broken/rooms', body);
  t.equal(broken.status, 502, 'the directory failing is a bad gateway, not a silent allow');
  t.match(broken.json, { type: 'Bad Gateway' });
  const noClaims = await fetch(`${h.url}/thresholds/buildings/b1`, { method: 'PUT', body: '{}', headers: { 'content-type': 'application/json' } });
  t.equal(noClaims.status, 401);
  await noClaims.body?.cancel();
  t.same(h.directory.unexpected, []);
});

t.test('breaches use room bounds over building bounds and land in the outbox with stable ids', async (t) => {
  const h = await startHarness(t);
  h.directory.set('b1', ['acme']);
  await callAs(h, manager, 'PUT', '/thresholds/buildings/b1', { temperature: { maxTemperature: 26, maxHumidity: 60 } });
  await callAs(h, manager, 'PATCH', '/thresholds/temperature/buildings/b1/rooms', { lab: { maxTemperature: 20 } });
  const now = h.clock.now;
  const batch = {
    readings: [
      temperatureReading('b1', 'lab', now, 22, { humidity: 65 }),
      temperatureReading('b1', 'hall', now, 22, { humidity: 50 }),
      temperatureReading('b1', 'hall', now + 1, 27),
      temperatureReading('b1', 'lab', now + 2, 20),
    ],
  };
  t.equal((await postSigned(h, batch)).status, 200);
  const { rows } = await h.pool.query('SELECT alert_id, message_key, payload FROM alert_outbox ORDER BY seq');
  const alerts = rows.map((r) => r.payload as Record<string, unknown>);
  t.same(
    alerts.map((a) => [a.roomId, a.bound, a.threshold, a.value]).sort(),
    [
      ['hall', 'maxTemperature', 26, 27],
      ['lab', 'maxHumidity', 60, 65],
      ['lab', 'maxTemperature', 20, 22],
    ],
    'lab: its own 20 °C and the building humidity; hall: the building 26 °C; 20 is not over 20',
  );
  for (const row of rows) {
    t.equal(row.message_key, `b1:${row.payload.roomId}`);
    t.same(Object.keys(row.payload).sort(), ['alertId', 'bound', 'buildingId', 'field', 'roomId', 'threshold', 'timestamp', 'type', 'value']);
    t.equal(row.payload.alertId, row.alert_id);
  }
  t.equal(h.nudges.count, 1, 'the relay is nudged, not awaited');

  h.clock.now += 1;
  t.equal((await postSigned(h, batch)).status, 200, 'the same readings again');
  t.equal(await countRows(h.pool, 'alert_outbox'), 3, 'the same breaches keep their ids and are queued once');
});

t.test('a room-level row wins: born with the building bounds of that moment, then on its own', async (t) => {
  const h = await startHarness(t);
  h.directory.set('b1', ['acme']);
  await callAs(h, manager, 'PUT', '/thresholds/buildings/b1', { temperature: { maxTemperature: 26, maxHumidity: 60 } });
  const lab = await callAs(h, manager, 'PATCH', '/thresholds/temperature/buildings/b1/rooms', { lab: { maxTemperature: 20 } });
  t.same(lab.json, { buildingId: 'b1', metric: 'temperature', rooms: { lab: { maxTemperature: 20, maxHumidity: 60 } } }, 'the new row copies the building bounds, then takes the patch');
  const office = await callAs(h, manager, 'PATCH', '/thresholds/temperature/buildings/b1/rooms', { office: { maxHumidity: null } });
  t.same(office.json, { buildingId: 'b1', metric: 'temperature', rooms: { office: { maxTemperature: 26 } } }, 'clearing a bound the room only had from the building');
  await callAs(h, manager, 'PUT', '/thresholds/buildings/b1', { temperature: { maxTemperature: 30 } });
  t.same(await thresholdRows(h), [
    { room_id: null, metric: 'temperature', bounds: { maxTemperature: 30, maxHumidity: 60 } },
    { room_id: 'lab', metric: 'temperature', bounds: { maxTemperature: 20, maxHumidity: 60 } },
    { room_id: 'office', metric: 'temperature', bounds: { maxTemperature: 26 } },
  ]);

  const now = h.clock.now;
  const batch = {
    readings: [
      temperatureReading('b1', 'lab', now, 22, { humidity: 65 }),
      temperatureReading('b1', 'office', now, 28, { humidity: 90 }),
      temperatureReading('b1', 'hall', now, 28, { humidity: 65 }),
    ],
  };
  t.equal((await postSigned(h, batch)).status, 200);
  const { rows } = await h.pool.query('SELECT payload FROM alert_outbox ORDER BY seq');
  t.same(
    rows.map((r) => [r.payload.roomId, r.payload.bound, r.payload.threshold, r.payload.value]).sort(),
    [
      ['hall', 'maxHumidity', 60, 65],
      ['lab', 'maxHumidity', 60, 65],
      ['lab', 'maxTemperature', 20, 22],
      ['office', 'maxTemperature', 26, 28],
    ],
    'lab and office keep their rows (the building is now 30 °C); office has no humidity bound; hall follows the building',
  );
});

t.test('a registration creates room rows from the building row and merges its bounds into every room', async (t) => {
  const h = await startHarness(t);
  h.directory.set('b1', ['acme']);
  await callAs(h, manager, 'PUT', '/thresholds/buildings/b1', { temperature: { maxTemperature: 26, maxHumidity: 60 } });
  await callAs(h, manager, 'PATCH', '/thresholds/temperature/buildings/b1/rooms', { lab: { maxHumidity: 50 } });
  await new PgBuildingStore(h.pool).applyRegistration({ buildingId: 'b1', rooms: ['lab', 'hall'], thresholds: [{ metric: 'temperature', bounds: { maxTemperature: 24 } }], sensors: [] });
  t.same(await thresholdRows(h), [
    { room_id: null, metric: 'temperature', bounds: { maxTemperature: 26, maxHumidity: 60 } },
    { room_id: 'hall', metric: 'temperature', bounds: { maxTemperature: 24, maxHumidity: 60 } },
    { room_id: 'lab', metric: 'temperature', bounds: { maxTemperature: 24, maxHumidity: 50 } },
  ]);
});

t.test('a patch of thousands of bad rooms gets a short 400: the first 100 problems, long room ids cut', async (t) => {
  const h = await startHarness(t);
  h.directory.set('b1', ['acme']);
  const body: Record<string, unknown> = { ['r'.repeat(500)]: { maxTemperature: 'hot' } };
  for (let i = 0; i < 5000; i++) body[`room-${i}`] = { maxTemperature: 'hot' };
  const answer = await callAs(h, manager, 'PATCH', '/thresholds/temperature/buildings/b1/rooms', body);
  t.equal(answer.status, 400);
  const json = answer.json as { message: string; errors: Array<{ room: string }> };
  t.equal(json.errors.length, 100);
  t.equal(json.message, '5001 of 5001 rooms have invalid bounds; nothing was stored (the first 100 of 5002 problems are listed)', 'the long id is also over 256 characters: two problems');
  t.equal(json.errors[0]?.room, `${'r'.repeat(64)}…`, 'a long room id is cut, not echoed');
  t.equal(await countRows(h.pool, 'thresholds'), 0);
});
