/**
 * Telemetry's claims routes change buildings (thresholds, device actions) with the user's claims, which
 * the mesh builds from the cookie: a request another site made the browser send (`Sec-Fetch-Site:
 * cross-site`, or `Origin: null`) is refused before any lookup. Signed ingest carries no cookie and is
 * not concerned.
 */
import t from 'tap';
import { encodeClaims } from '../../../shared/claims.js';
import { sign } from '../../../shared/hmac.js';
import { call, countRows, SHARED_SECRET, startHarness, temperatureReading } from './support/harness.js';

const manager = { sub: 'u-fm', accountName: 'fm@acme.test', memberships: [{ domainName: 'acme', role: 'facility_manager' }] };
const CROSS_SITE_MARKS: Array<Record<string, string>> = [
  { 'sec-fetch-site': 'cross-site', origin: 'https://attacker.example' },
  { origin: 'null' },
];

t.test('threshold edits and device actions from another site are 403, before the building lookup', async (t) => {
  const h = await startHarness(t);
  const headers = { 'x-gateway-claims': encodeClaims(manager), 'content-type': 'application/json' };
  for (const marks of CROSS_SITE_MARKS) {
    const put = await call(`${h.url}/thresholds/buildings/b1`, 'PUT', JSON.stringify({ temperature: { maxTemperature: 40 } }), { ...headers, ...marks });
    t.equal(put.status, 403, `PUT thresholds ${JSON.stringify(marks)}`);
    t.match(put.json, { type: 'Forbidden', message: /^cross-site request refused/ });
    const patch = await call(`${h.url}/thresholds/temperature/buildings/b1/rooms`, 'PATCH', JSON.stringify({ r1: { maxTemperature: 40 } }), { ...headers, ...marks });
    t.equal(patch.status, 403, `PATCH thresholds ${JSON.stringify(marks)}`);
    const action = { metric: 'temperature', buildingId: 'b1', roomId: 'r1', sensorId: 's1', action: 'setTarget', arguments: { target: 30 } };
    const act = await call(`${h.url}/executeAction`, 'POST', JSON.stringify(action), { ...headers, ...marks });
    t.equal(act.status, 403, `executeAction ${JSON.stringify(marks)}`);
  }
  t.equal(await countRows(h.pool, 'thresholds'), 0, 'no threshold was stored');
  t.same(h.directory.calls, [], 'the building directory was never asked');
  t.same(h.directory.unexpected, []);

  h.directory.set('b1', ['acme']);
  const own = await call(`${h.url}/thresholds/buildings/b1`, 'PUT', JSON.stringify({ temperature: { maxTemperature: 40 } }), { ...headers, 'sec-fetch-site': 'same-origin' });
  t.equal(own.status, 200, 'the app itself edits thresholds');
  t.equal(await countRows(h.pool, 'thresholds'), 1);
});

t.test('signed ingest is not refused for the marks: it carries no cookie', async (t) => {
  const h = await startHarness(t);
  const body = JSON.stringify({ readings: [temperatureReading('b1', 'r1', h.clock.now - 1000, 21)] });
  const answer = await call(`${h.url}/ingest`, 'POST', body, { 'content-type': 'application/json', 'x-signature': sign(body, SHARED_SECRET), 'sec-fetch-site': 'cross-site' });
  t.equal(answer.status, 200);
  t.same(answer.json, { accepted: 1 });
});
