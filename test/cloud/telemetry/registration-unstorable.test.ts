/**
 * A registration the database cannot store (a NUL in a sensor endpoint, which PostgreSQL text refuses)
 * must be skipped as malformed, like any other bad message: if it reached the database, the consumer
 * would fail on it, restart at the same offset and fail again, and no later registration would ever
 * be applied.
 */
import t from 'tap';
import { parseRegistration } from '../../../cloud/telemetry/domain/registration.js';
import { until } from './support/harness.js';
import { startRegistrationRun } from './support/registration-run.js';

const sensor = (endpoint: string) => ({ sensorId: 'stat-1', roomId: 'lab', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint });

t.test('an endpoint with NUL, a lone surrogate or a control character is refused with its reason', async (t) => {
  for (const [endpoint, what] of [
    ['http://127.0.0.1:9/zone\u00001', 'NUL'],
    ['http://127.0.0.1:9/zone\ud8001', 'lone surrogate'],
    ['http://127.0.0.1:9/zone\n1', 'line break'],
    ['http://127.0.0.1:9/zone\t1', 'tab'],
  ] as const) {
    const parsed = parseRegistration({ buildingId: 'b1', sensors: [sensor(endpoint)] });
    t.same(parsed, { ok: false, errors: ['sensors[0].endpoint: an endpoint holds no control character (NUL, tab, line break, …) or lone surrogate'] }, what);
  }
  t.ok(parseRegistration({ buildingId: 'b1', sensors: [sensor('http://127.0.0.1:9/zone-1')] }).ok, 'a plain endpoint is still accepted');
});

t.test('a registration PostgreSQL cannot store is skipped, and the next one is applied', async (t) => {
  // Read in the order sent, so the good message comes after the bad one.
  const { directory, pool, counted } = await startRegistrationRun(t, [
    { buildingId: 'b-nul', rooms: ['lab'], sensors: [sensor('http://127.0.0.1:9/zone\u00001')] },
    { buildingId: 'b-good', rooms: ['lab'], sensors: [sensor('http://127.0.0.1:9/zone-1')] },
  ]);

  await until(async () => (await counted('registered')) === 1, 30_000, 'the registration after the unstorable one to be applied');
  t.equal(await counted('malformed'), 1, 'the unstorable message is counted as malformed');
  const stored = await pool.query(`SELECT building_id, endpoint FROM sensors ORDER BY building_id`);
  t.same(stored.rows, [{ building_id: 'b-good', endpoint: 'http://127.0.0.1:9/zone-1' }], 'only the good registration is stored');
  t.same(directory.unexpected, []);
});
