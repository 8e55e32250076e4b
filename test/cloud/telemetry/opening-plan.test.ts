/**
 * Round trip 1 of a batch (store/opening.ts) runs its opening statement on the generic plan: planned
 * once per connection, not for every batch (PostgreSQL chose a custom plan each time, and planning
 * cost more than executing). PostgreSQL counts the plans of each prepared statement.
 */
import t from 'tap';
import { open } from '../../../cloud/telemetry/store/opening.js';
import { migratedPool } from './support/database.js';

t.test('twelve openings on one connection plan the opening statement once, generically', async (t) => {
  const pool = await migratedPool(t);
  const client = await pool.connect();
  t.teardown(() => client.release());
  const now = Date.now();
  for (let i = 0; i < 12; i++) {
    const state = await open(client, {
      keyId: '',
      batchId: `plan-${i}`,
      accepted: 1,
      oldest: now,
      buildings: ['b1', 'b2'],
      boundedMetrics: ['temperature'],
      hours: [Math.floor(now / 3_600_000) * 3_600_000],
    });
    t.equal(state?.claimed, true, `batch ${i} is claimed`);
    await client.query('COMMIT');
  }
  const { rows } = await client.query<{ generic: string; custom: string }>(
    "SELECT generic_plans::text AS generic, custom_plans::text AS custom FROM pg_prepared_statements WHERE name = 'telemetry-ingest-open'",
  );
  t.same(rows, [{ generic: '12', custom: '0' }]);
  // The setting lasts only as long as each transaction.
  t.equal((await client.query<{ mode: string }>("SELECT current_setting('plan_cache_mode') AS mode")).rows[0]?.mode, 'auto');
});
