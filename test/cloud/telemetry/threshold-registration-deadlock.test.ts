import pg from 'pg';
import t from 'tap';
import { untilSessionsWaitForLocks } from '../../support/stack.js';
import { callAs, startHarness } from './support/harness.js';

const manager = { sub: 'u-fm', accountName: 'fm@acme.test', memberships: [{ domainName: 'acme', role: 'facility_manager' }] };

/**
 * A registration writes a building's threshold rows in two statements: it inserts the rooms' missing
 * rows, then merges its bounds into every room's row. A PATCH landing between the two, on a room the
 * registration has just created and one it has yet to merge into, used to hold what the other needed
 * next: PostgreSQL aborted one of them as a deadlock (40P01) and its change was lost.
 *
 * The interleaving is made deterministic with a third session holding room `a`'s row, first in the
 * registration's merge: the registration stops there with room `c` already inserted, then the PATCH
 * is sent (room `b`, then `c`) and is seen waiting, then the third session lets go.
 */
t.test('a registration and a PATCH on the rooms it creates both land', async (t) => {
  const h = await startHarness(t);
  h.directory.set('b1', ['acme']);
  t.equal((await callAs(h, manager, 'PUT', '/thresholds/buildings/b1', { temperature: { maxTemperature: 30 } })).status, 200);
  const path = '/thresholds/temperature/buildings/b1/rooms';
  t.equal((await callAs(h, manager, 'PATCH', path, { a: { maxTemperature: 20 }, b: { maxTemperature: 20 } })).status, 200);

  const blocker = new pg.Client({ connectionString: (h.pool.options as { connectionString: string }).connectionString });
  await blocker.connect();
  t.teardown(() => blocker.end());
  await blocker.query('BEGIN');
  await blocker.query(`SELECT 1 FROM thresholds WHERE building_id = 'b1' AND room_id = 'a' AND metric = 'temperature' FOR UPDATE`);

  const registered = h.buildings
    .applyRegistration({ buildingId: 'b1', rooms: ['c', 'b', 'a'], thresholds: [{ metric: 'temperature', bounds: { maxHumidity: 60 } }], sensors: [] })
    .then(
      () => 'stored',
      (err: { code?: string }) => `failed: ${err.code ?? String(err)}`,
    );
  await untilSessionsWaitForLocks(h.pool, 1);
  const patched = callAs(h, manager, 'PATCH', path, { c: { maxTemperature: 25 }, b: { maxTemperature: 25 } });
  await untilSessionsWaitForLocks(h.pool, 2);
  await blocker.query('COMMIT');

  t.equal(await registered, 'stored', 'the registration is not lost to a deadlock');
  t.equal((await patched).status, 200, 'the PATCH is not lost to a deadlock');
  const { rows } = await h.pool.query<{ room_id: string | null; bounds: Record<string, number> }>(
    `SELECT room_id, bounds FROM thresholds WHERE building_id = 'b1' AND metric = 'temperature' ORDER BY room_id NULLS FIRST`,
  );
  t.same(rows, [
    { room_id: null, bounds: { maxTemperature: 30 } },
    { room_id: 'a', bounds: { maxTemperature: 20, maxHumidity: 60 } },
    { room_id: 'b', bounds: { maxTemperature: 25, maxHumidity: 60 } },
    { room_id: 'c', bounds: { maxTemperature: 25, maxHumidity: 60 } },
  ], 'each room holds both changes');
  t.same(h.directory.unexpected, []);
});
