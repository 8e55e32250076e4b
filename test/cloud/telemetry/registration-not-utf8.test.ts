/**
 * A registration that is not valid UTF-8 is skipped as malformed. Decoded anyway, each invalid sequence
 * would become U+FFFD: the bytes `b` FF and `b` FE would both name building "b\uFFFD", and two
 * buildings would be merged into one.
 */
import t from 'tap';
import { until } from './support/harness.js';
import { startRegistrationRun } from './support/registration-run.js';

/** A registration's JSON with `id` as the building id's raw bytes. */
const registrationOf = (id: Buffer, room: string) => Buffer.concat([Buffer.from('{"buildingId":"'), id, Buffer.from(`","rooms":["${room}"]}`)]);

t.test('registrations whose bytes are not UTF-8 are skipped, and the next one is applied', async (t) => {
  // Read in the order sent, so the good message comes after the bad ones.
  const { directory, pool, counted } = await startRegistrationRun(t, [
    registrationOf(Buffer.from([0x62, 0xff]), 'lab'),
    registrationOf(Buffer.from([0x62, 0xfe]), 'office'),
    registrationOf(Buffer.from('b-good'), 'lab'),
  ]);

  await until(async () => (await counted('registered')) + (await counted('malformed')) === 3, 30_000, 'the three registrations to be handled');
  t.equal(await counted('malformed'), 2, 'both messages that are not UTF-8 are counted as malformed');
  t.equal(await counted('registered'), 1, 'the valid one is applied');
  const stored = await pool.query(`SELECT building_id FROM buildings ORDER BY building_id`);
  t.same(stored.rows, [{ building_id: 'b-good' }], 'no building made of a replacement character');
  t.same(directory.unexpected, []);
});
