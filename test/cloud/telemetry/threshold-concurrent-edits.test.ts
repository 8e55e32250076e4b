import pg from 'pg';
import t from 'tap';
import { PgBuildingStore } from '../../../cloud/telemetry/store/buildings.js';
import { untilSessionsWaitForLocks } from '../../support/stack.js';
import { callAs, startHarness, type Answer, type Harness } from './support/harness.js';

type Tap = { teardown(fn: () => unknown): void };

const manager = { sub: 'u-fm', accountName: 'fm@acme.test', memberships: [{ domainName: 'acme', role: 'facility_manager' }] };


/**
 * Holds the threshold rows matching `where` locked while `edits` are sent one after the other, each
 * sent once the one before is queued on the lock; then lets them all go and returns their answers.
 * The edits thereby start at the same moment, each from the first row it writes.
 */
async function editsQueuedBehindLock(t: Tap, h: Harness, where: string, edits: Array<() => Promise<Answer>>): Promise<Answer[]> {
  const blocker = new pg.Client({ connectionString: (h.pool.options as { connectionString: string }).connectionString });
  await blocker.connect();
  t.teardown(() => blocker.end());
  await blocker.query('BEGIN');
  await blocker.query(`SELECT 1 FROM thresholds WHERE ${where} FOR UPDATE`);
  const answers: Array<Promise<Answer>> = [];
  for (const [i, edit] of edits.entries()) {
    answers.push(edit());
    await untilSessionsWaitForLocks(h.pool, i + 1);
  }
  await blocker.query('COMMIT');
  return Promise.all(answers);
}

async function bounds(h: Harness) {
  const { rows } = await h.pool.query<{ room_id: string | null; metric: string; bounds: Record<string, number> }>(
    'SELECT room_id, metric, bounds FROM thresholds ORDER BY metric, room_id NULLS FIRST',
  );
  return rows;
}

t.test('two PATCHes naming the same rooms in opposite orders both land', async (t) => {
  const h = await startHarness(t);
  h.directory.set('b1', ['acme']);
  const path = '/thresholds/temperature/buildings/b1/rooms';
  t.equal((await callAs(h, manager, 'PATCH', path, { a: { maxTemperature: 20 }, b: { maxTemperature: 20 } })).status, 200);

  const answers = await editsQueuedBehindLock(t, h, `room_id IN ('a', 'b')`, [
    () => callAs(h, manager, 'PATCH', path, { a: { maxTemperature: 25 }, b: { maxTemperature: 25 } }),
    () => callAs(h, manager, 'PATCH', path, { b: { maxHumidity: 60 }, a: { maxHumidity: 60 } }),
  ]);
  t.same(answers.map((a) => a.status), [200, 200], 'neither edit is lost to a deadlock');
  t.same(await bounds(h), [
    { room_id: 'a', metric: 'temperature', bounds: { maxTemperature: 25, maxHumidity: 60 } },
    { room_id: 'b', metric: 'temperature', bounds: { maxTemperature: 25, maxHumidity: 60 } },
  ]);
  t.same(h.directory.unexpected, []);
});

t.test('two PUTs naming the same metrics in opposite orders both land', async (t) => {
  const h = await startHarness(t);
  h.directory.set('b1', ['acme']);
  const path = '/thresholds/buildings/b1';
  t.equal((await callAs(h, manager, 'PUT', path, { temperature: { maxTemperature: 20 }, airQuality: { maxCo2: 800 } })).status, 200);

  const answers = await editsQueuedBehindLock(t, h, 'room_id IS NULL', [
    () => callAs(h, manager, 'PUT', path, { airQuality: { maxCo2: 1000 }, temperature: { maxTemperature: 26 } }),
    () => callAs(h, manager, 'PUT', path, { temperature: { maxHumidity: 60 }, airQuality: { maxPm25: 25 } }),
  ]);
  t.same(answers.map((a) => a.status), [200, 200], 'neither edit is lost to a deadlock');
  t.same(await bounds(h), [
    { room_id: null, metric: 'airQuality', bounds: { maxCo2: 1000, maxPm25: 25 } },
    { room_id: null, metric: 'temperature', bounds: { maxTemperature: 26, maxHumidity: 60 } },
  ]);
});

t.test('a registration and a PATCH naming the same rooms in other orders both land', async (t) => {
  const h = await startHarness(t);
  h.directory.set('b1', ['acme']);
  const path = '/thresholds/temperature/buildings/b1/rooms';
  t.equal((await callAs(h, manager, 'PATCH', path, { a: { maxTemperature: 20 }, b: { maxTemperature: 20 } })).status, 200);
  const store = new PgBuildingStore(h.pool);

  const answers = await editsQueuedBehindLock(t, h, `room_id IN ('a', 'b')`, [
    () => callAs(h, manager, 'PATCH', path, { a: { maxTemperature: 25 }, b: { maxTemperature: 25 } }),
    async () => {
      await store.applyRegistration({ buildingId: 'b1', rooms: ['b', 'a'], thresholds: [{ metric: 'temperature', bounds: { maxHumidity: 60 } }], sensors: [] });
      const registered: Answer = { status: 200, contentType: '', text: '', json: undefined };
      return registered;
    },
  ]);
  t.same(answers.map((a) => a.status), [200, 200], 'neither is lost to a deadlock');
  t.same(await bounds(h), [
    { room_id: 'a', metric: 'temperature', bounds: { maxTemperature: 25, maxHumidity: 60 } },
    { room_id: 'b', metric: 'temperature', bounds: { maxTemperature: 25, maxHumidity: 60 } },
  ]);
});
