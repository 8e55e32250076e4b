/**
 * An endpoint whose user or password is not valid percent-encoding (a literal "%", as in `50%off`) was
 * registered, then every /executeAction on it was a vague 500 bad_endpoint: the device adapter decodes
 * them with decodeURIComponent to send Basic authorization. It is refused at registration, with a
 * reason that does not show the password.
 */
import t from 'tap';
import { parseRegistration } from '../../../cloud/telemetry/domain/registration.js';
import { planDeviceRequest } from '../../../shared/devices/adapter.js';
import type { DeviceBinding } from '../../../shared/devices/bindings.js';
import { until } from './support/harness.js';
import { startRegistrationRun } from './support/registration-run.js';

const sensor = (endpoint: string) => ({ sensorId: 'stat-1', roomId: 'lab', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint });
const setTarget: DeviceBinding = { path: '/hold', method: 'POST', fields: { target: 'holdTemp' }, transport: 'http' };
const REFUSAL = 'sensors[0].endpoint: the user and password of an endpoint are percent-encoded (write a literal "%" as %25); these are not (not shown: a password is a secret)';

t.test('a user or password that is not valid percent-encoding is refused, without showing it', async (t) => {
  for (const endpoint of ['http://admin:50%off@10.0.4.21:8089', 'http://admin:hunter2%@10.0.4.21:8089', 'http://op%zz:pw@10.0.4.21', 'https://admin:%E2%82@stat.local']) {
    const parsed = parseRegistration({ buildingId: 'b1', sensors: [sensor(endpoint)] });
    t.same(parsed, { ok: false, errors: [REFUSAL] }, endpoint);
    t.throws(() => planDeviceRequest(endpoint, setTarget, { target: 20 }), { code: 'bad_endpoint' }, 'which the adapter could never send');
  }
});

t.test('an endpoint whose credentials are validly encoded is accepted, and the adapter can send to it', async (t) => {
  for (const endpoint of ['http://admin:50%25off@10.0.4.21:8089', 'http://op%40site:p%C3%A4ss%3Aword@stat.local', 'http://admin:@10.0.4.21', 'http://10.0.4.21:8089']) {
    const parsed = parseRegistration({ buildingId: 'b1', sensors: [sensor(endpoint)] });
    t.ok(parsed.ok, endpoint);
    t.doesNotThrow(() => planDeviceRequest(endpoint, setTarget, { target: 20 }), endpoint);
  }
});

t.test('a registration with such an endpoint is skipped as malformed, and the next one is applied', async (t) => {
  const { directory, pool, counted } = await startRegistrationRun(t, [
    { buildingId: 'b-pct', rooms: ['lab'], sensors: [sensor('http://admin:50%off@127.0.0.1:9')] },
    { buildingId: 'b-good', rooms: ['lab'], sensors: [sensor('http://admin:50%25off@127.0.0.1:9')] },
  ]);
  await until(async () => (await counted('registered')) + (await counted('malformed')) === 2, 30_000, 'both registrations to be read');
  t.equal(await counted('malformed'), 1, 'the refused message is counted as malformed');
  t.equal(await counted('registered'), 1, 'the next one is applied');
  const stored = await pool.query(`SELECT building_id, endpoint FROM sensors ORDER BY building_id`);
  t.same(stored.rows, [{ building_id: 'b-good', endpoint: 'http://admin:50%25off@127.0.0.1:9' }], 'only the good registration is stored');
  t.same(directory.unexpected, []);
});
