/**
 * Replicas polling one expired lock take it over at once. FerretDB 1.x checks an update's filter on its
 * read and writes the document back by `_id`, so an `updateOne({_id, owner: <expired owner>})` from each
 * of them could match for several, each then finding itself the owner for a moment: two holders of one
 * preferences record lock, and one write lost. Each claimer here is a store on a client of its own (a
 * replica), all against the real FerretDB. The claims start a few milliseconds apart, at random, as
 * polling replicas' do: started in lockstep, every read comes before every write and the race hides.
 * Before the takeover was made exclusive, 20 replicas over 100 rounds had two or more claimers in
 * about one round in six.
 *
 * A replica takes a lock over only once it has seen it unchanged for a lease on its own monotonic clock.
 * So each replica first looks at the lock, then the replicas' monotonic clock (one the test moves by
 * hand) is moved on by the lease, and then they all claim it at once. Preferences writes racing over a
 * record lock left behind: record-lock-takeover-race.test.ts.
 */
import t from 'tap';
import { performance } from 'node:perf_hooks';
import { COLLECTIONS } from '../../../cloud/notification/store.js';
import { expiredLock, replicas, spread } from './support/lock-replicas.js';
import { freshMongo, uniqueName } from './support/stack.js';

const REPLICAS = 20;
const ROUNDS = 100;
const LEASE_MS = 10_000;

/** A monotonic clock that runs as the process's does, plus whatever the test moves it on by. */
function movableClock(): { clock: () => number; moveOn: (ms: number) => void } {
  let moved = 0;
  return {
    clock: () => performance.now() + moved,
    moveOn: (ms) => {
      moved += ms;
    },
  };
}

t.test('an expired lock polled by many replicas at once is taken over by exactly one, in every round', async (t) => {
  const { db, uri } = await freshMongo(t);
  const time = movableClock();
  const stores = await replicas(t, uri, REPLICAS, { monotonicClock: time.clock });
  const locks = db.collection<{ _id: string; owner: string; claimedAt: Date; state: 'running' }>(COLLECTIONS.migrations);
  const wrong: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const id = uniqueName('lock');
    await locks.insertOne({ ...expiredLock(id), state: 'running' });
    const owners = stores.map(() => uniqueName('replica'));
    const firstLooks = await Promise.all(stores.map((store, i) => store.claimLock(id, owners[i] as string, LEASE_MS)));
    if (firstLooks.some((answer) => answer !== 'held')) wrong.push(`round ${round}: taken over at first sight`);
    time.moveOn(LEASE_MS);
    const answers = await Promise.all(stores.map((store, i) => spread(() => store.claimLock(id, owners[i] as string, LEASE_MS))));
    const winners = owners.filter((_, i) => answers[i] === 'claimed');
    const stored = await locks.findOne({ _id: id });
    if (winners.length !== 1 || stored?.owner !== winners[0]) wrong.push(`round ${round}: ${winners.length} claimers got it`);
  }
  t.same(wrong, [], 'in every round exactly one claimer got the lock, and it is the stored owner');
  t.equal(await locks.countDocuments({ _id: /^takeover:/ }), 0, 'no takeover lock is left behind');
});

t.test('an expired lock whose takeover was left half-way (its taker stopped) is still taken over, once', async (t) => {
  const { db, uri } = await freshMongo(t);
  const time = movableClock();
  const stores = await replicas(t, uri, REPLICAS, { monotonicClock: time.clock });
  const locks = db.collection<{ _id: string; owner: string; claimedAt: Date; state?: 'running' }>(COLLECTIONS.migrations);
  const id = uniqueName('lock');
  const lock = expiredLock(id);
  await locks.insertOne({ ...lock, state: 'running' });
  await locks.insertOne({ _id: `takeover:${JSON.stringify([id, lock.owner, lock.claimedAt.getTime()])}`, owner: uniqueName('stopped'), claimedAt: lock.claimedAt });
  // Every replica looks, the clock moves on a lease, and so on: the lock, then its left-over takeover
  // lock, each has to be seen unchanged for a lease before it is taken over.
  const answers: string[] = [];
  for (let look = 0; look < 4 && !answers.includes('claimed'); look++) {
    answers.push(...(await Promise.all(stores.map((store, i) => spread(() => store.claimLock(id, `replica-${i}`, LEASE_MS))))));
    time.moveOn(LEASE_MS);
  }
  t.equal(answers.filter((a) => a === 'claimed').length, 1, 'exactly one replica holds it');
  t.match(await locks.findOne({ _id: id }), { owner: /^replica-/, state: 'running' });
  t.equal(await locks.countDocuments({ _id: /^takeover:/ }), 0, 'the takeover locks are released');
});
