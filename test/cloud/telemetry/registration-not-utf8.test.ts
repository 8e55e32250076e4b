/**
 * A registration that is not valid UTF-8 is skipped as malformed. Decoded anyway, each invalid sequence
 * would become U+FFFD: the bytes `b` FF and `b` FE would both name building "b\uFFFD", and two
 * buildings would be merged into one.
 */
import pg from 'pg';
import t from 'tap';
import { startFakeDirectory } from '../../support/fake-directory.js';
import { freshPgDatabase, quietAtTeardown } from './support/database.js';
import { until } from './support/harness.js';
import { startBrokeredService } from './support/brokered-service.js';
import { createTopics, produce, uniqueName } from './support/kafka.js';

/** A registration's JSON with `id` as the building id's raw bytes. */
const registrationOf = (id: Buffer, room: string) => Buffer.concat([Buffer.from('{"buildingId":"'), id, Buffer.from(`","rooms":["${room}"]}`)]);

t.test('registrations whose bytes are not UTF-8 are skipped, and the next one is applied', async (t) => {
  // First: it fails the test at teardown on a call it was not set up for, which must skip no cleanup.
  const directory = await startFakeDirectory(t);
  const alertsTopic = uniqueName('alerts');
  const registrationsTopic = uniqueName('registrations');
  await createTopics(t, [alertsTopic]);
  // One partition, so the good message comes after the bad ones.
  await createTopics(t, [registrationsTopic], 1);
  await produce(registrationsTopic, [
    registrationOf(Buffer.from([0x62, 0xff]), 'lab'),
    registrationOf(Buffer.from([0x62, 0xfe]), 'office'),
    registrationOf(Buffer.from('b-good'), 'lab'),
  ]);
  const pool = quietAtTeardown(new pg.Pool({ connectionString: await freshPgDatabase(t) }));
  const { metrics } = await startBrokeredService(t, { pool, directoryUrl: directory.url, alertsTopic, registrationsTopic });

  const counted = async (outcome: string) => (await metrics.registrations.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
  await until(async () => (await counted('registered')) + (await counted('malformed')) === 3, 30_000, 'the three registrations to be handled');
  t.equal(await counted('malformed'), 2, 'both messages that are not UTF-8 are counted as malformed');
  t.equal(await counted('registered'), 1, 'the valid one is applied');
  const stored = await pool.query(`SELECT building_id FROM buildings ORDER BY building_id`);
  t.same(stored.rows, [{ building_id: 'b-good' }], 'no building made of a replacement character');
  t.same(directory.unexpected, []);
});
