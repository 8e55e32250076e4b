/**
 * Two replicas on one FerretDB writing the same preferences record at once. FerretDB 1.x checks an
 * update's filter on its read and writes the whole document back, so a revision check alone let one
 * replica overwrite an entry the other had just written, while both answered 200.
 */
import t from 'tap';
import { ALERTABLE_METRICS } from '../../../shared/catalog/metrics.js';
import { COLLECTIONS } from '../../../cloud/notification/store.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { call, claims, startHarness } from './support/harness.js';
import { uniqueName } from './support/stack.js';

const directory = await startFakeDirectory(t);
const one = await startHarness(t, { directory });
const two = await startHarness(t, { directory, shared: { db: one.db, channel: one.channel, keyPrefix: one.keyPrefix } });
const acme = uniqueName('acme');

t.test('writes of different types through two replicas at once all land, in every round', async (t) => {
  const rounds = 30;
  const incomplete: string[] = [];
  for (let round = 0; round < rounds; round++) {
    const account = uniqueName('dana');
    const header = claims(`sub-${account}`, account, [{ domainName: acme, role: 'member' }]);
    const results = await Promise.all(
      ALERTABLE_METRICS.map((type, i) =>
        call(i % 2 === 0 ? one.url : two.url, 'POST', '/preferences', { claims: header, body: { domainName: acme, type, enabled: i % 2 === 0 } }),
      ),
    );
    t.same(results.map((r) => r.status), ALERTABLE_METRICS.map(() => 200), `round ${round}: every write answered 200`);
    const record = await one.db.collection(COLLECTIONS.preferences).findOne({ accountName: account, domainName: acme });
    const stored = new Map((record?.preferences as Array<{ notificationType: string; isSubscribed: boolean }>).map((p) => [p.notificationType, p.isSubscribed]));
    const expected = new Map(ALERTABLE_METRICS.map((type, i) => [type, i % 2 === 0]));
    if (stored.size !== expected.size || [...expected].some(([type, on]) => stored.get(type) !== on)) incomplete.push(`round ${round}: ${JSON.stringify(record?.preferences)}`);
  }
  t.same(incomplete, [], 'no round lost an entry that was answered 200');
  t.equal(await one.db.collection(COLLECTIONS.locks).countDocuments({}), 0, 'every record lock was released');
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
