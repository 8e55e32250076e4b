/**
 * A device action whose registered sensor cannot be looked up (PostgreSQL failing) answers 500, and it
 * must still show on /metrics: as telemetry_actions_total{outcome="lookup_failed"}, like a directory
 * lookup that fails.
 */
import t from 'tap';
import { call, callAs, startHarness, type Harness } from './support/harness.js';

const manager = { sub: 'u-fm', accountName: 'fm@acme.test', memberships: [{ domainName: 'acme', role: 'facility_manager' }] };
const command = { metric: 'temperature', buildingId: 'b1', roomId: 'r1', sensorId: 'stat-ok', action: 'setTarget', arguments: { target: 21.5 } };

/** The actions counted under `outcome` on /metrics. */
async function actionsCounted(h: Harness, outcome: string): Promise<number> {
  const metrics = await call(`${h.url}/metrics`, 'GET');
  const line = new RegExp(`^telemetry_actions_total\\{outcome="${outcome}",service="telemetry"\\} (\\d+)$`, 'm').exec(metrics.text);
  if (!line) throw new Error(`no telemetry_actions_total{outcome="${outcome}"} on /metrics`);
  return Number(line[1]);
}

t.test('an action whose sensor lookup fails in PostgreSQL answers 500 and counts once as outcome="lookup_failed"', async (t) => {
  const h = await startHarness(t);
  h.directory.set('b1', ['acme']);
  // The sensor lookup fails in the database, as the metrics-accuracy test breaks a batch.
  await h.pool.query('ALTER TABLE sensors RENAME TO sensors_away');
  const before = { lookupFailed: await actionsCounted(h, 'lookup_failed'), accepted: await actionsCounted(h, 'accepted') };

  const answer = await callAs(h, manager, 'POST', '/executeAction', command);
  t.equal(answer.status, 500, 'the sensor cannot be looked up');
  t.notMatch(answer.text, /sensors/, 'no SQL detail in the answer');
  t.equal(await actionsCounted(h, 'lookup_failed'), before.lookupFailed + 1, 'counted as a failed lookup, once');
  t.equal(await actionsCounted(h, 'accepted'), before.accepted, 'not as accepted');
});
