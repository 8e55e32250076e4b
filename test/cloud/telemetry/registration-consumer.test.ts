import t from 'tap';
import { encodeClaims } from '../../../shared/claims.js';
import { call, until } from './support/harness.js';
import { produce } from './support/kafka.js';
import { startRegistrationRun } from './support/registration-run.js';

t.test('building-registrations: building, rooms, sensors, and thresholds for every room at once', async (t) => {
  // Read in the order sent; sent before the service starts, and read all the same.
  const { directory, pool, service, registrationsTopic, counted } = await startRegistrationRun(t, [
    'not json at all',
    { buildingId: 'b-bad', sensors: [{ sensorId: 's', roomId: 'r', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint: 'gopher://x' }] },
    {
      buildingId: 'b1',
      rooms: ['lobby', 'lab', 'office'],
      thresholds: { temperature: { maxTemperature: 26 }, airQuality: { maxCo2: 1000 } },
      sensors: [
        { sensorId: 'stat-1', roomId: 'lab', metric: 'temperature', driver: 'zigbee-rest-thermostat', endpoint: 'http://127.0.0.1:9/api/devices/0x01' },
        { sensorId: 'co2-1', roomId: 'lab', metric: 'airQuality', driver: 'none', endpoint: 'http://127.0.0.1:9' },
        { sensorId: 'stat-2', roomId: 'attic', metric: 'temperature', driver: 'honeywell-lcc-thermostat', endpoint: 'https://127.0.0.1:9/zones/3' },
      ],
    },
  ]);

  await until(async () => (await counted('registered')) === 1, 30_000, 'the registration to be applied');
  t.equal(await counted('malformed'), 2, 'the non-JSON and the gopher:// messages were skipped, and did not block the next one');

  const rooms = await pool.query(`SELECT room_id FROM rooms WHERE building_id = 'b1' ORDER BY room_id`);
  t.same(rooms.rows.map((r) => r.room_id), ['attic', 'lab', 'lobby', 'office'], 'the listed rooms and the rooms sensors name');
  const thresholds = await pool.query(`SELECT room_id, metric, bounds FROM thresholds WHERE building_id = 'b1' ORDER BY room_id, metric`);
  t.equal(thresholds.rows.length, 8, 'two metrics for each of four rooms');
  t.ok(thresholds.rows.every((r) => (r.metric === 'temperature' ? r.bounds.maxTemperature === 26 : r.bounds.maxCo2 === 1000)));
  t.equal((await pool.query(`SELECT 1 FROM buildings WHERE building_id = 'b-bad'`)).rowCount, 0, 'nothing of the refused message');

  directory.set('b1', ['acme']);
  const listing = await call(`http://127.0.0.1:${service.port}/sensors/buildings/b1/rooms/lab`, 'GET', undefined, {
    'x-gateway-claims': encodeClaims({ sub: 'u1', memberships: [{ domainName: 'acme', role: 'viewer' }] }),
  });
  t.same(
    (listing.json as { sensors: Array<{ sensorId: string; capability: string[] }> }).sensors.map((s) => [s.sensorId, s.capability]),
    [['co2-1', []], ['stat-1', ['setTarget', 'increase', 'decrease']]],
  );

  // Registering again moves a sensor and raises a threshold; nothing is duplicated.
  await produce(registrationsTopic, [{ buildingId: 'b1', rooms: ['lab'], thresholds: { temperature: { maxTemperature: 24 } }, sensors: [{ sensorId: 'stat-1', roomId: 'office', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint: 'http://127.0.0.1:9' }] }]);
  await until(async () => (await counted('registered')) === 2, 30_000, 'the second registration');
  const moved = await pool.query(`SELECT room_id, driver FROM sensors WHERE building_id = 'b1' AND sensor_id = 'stat-1'`);
  t.same(moved.rows, [{ room_id: 'office', driver: 'ecobee-local-thermostat' }]);
  const temps = await pool.query(`SELECT room_id, bounds FROM thresholds WHERE building_id = 'b1' AND metric = 'temperature' ORDER BY room_id`);
  t.same(
    temps.rows.map((r) => [r.room_id, r.bounds.maxTemperature]),
    [['attic', 26], ['lab', 24], ['lobby', 26], ['office', 24]],
    'the rooms of this message (lab, and office where the sensor moved) get the new bound',
  );
  t.equal((await pool.query(`SELECT 1 FROM thresholds WHERE building_id = 'b1'`)).rowCount, 8, 'updated in place, nothing duplicated');
});
