import t from 'tap';
import { BatchedLookup } from '../../../cloud/tenancy/batched-lookup.js';

/** A fetch whose batches the test releases by hand, recording what each batch asked for. */
function manualFetch() {
  const batches: { keys: string[]; release(values?: Record<string, number>): void; fail(error: Error): void }[] = [];
  const fetch = (keys: string[]) =>
    new Promise<Map<string, number>>((resolve, reject) => {
      batches.push({
        keys,
        release: (values = Object.fromEntries(keys.map((k) => [k, k.length]))) => resolve(new Map(Object.entries(values))),
        fail: reject,
      });
    });
  return { batches, fetch };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

t.test('a lone lookup is dispatched at once, in a batch of its own', async (t) => {
  const { batches, fetch } = manualFetch();
  const lookup = new BatchedLookup(fetch, () => -1, { maxInFlight: 2, maxBatch: 10 });
  const answer = lookup.load('abc');
  t.same(batches.map((b) => b.keys), [['abc']]);
  batches[0]?.release();
  t.equal(await answer, 3);
});

t.test('lookups arriving while batches run leave together when one finishes; duplicates share a slot', async (t) => {
  const { batches, fetch } = manualFetch();
  const lookup = new BatchedLookup(fetch, () => -1, { maxInFlight: 1, maxBatch: 10 });
  const first = lookup.load('a');
  const queued = [lookup.load('bb'), lookup.load('ccc'), lookup.load('bb')];
  t.equal(batches.length, 1, 'the others wait for capacity');
  batches[0]?.release();
  t.equal(await first, 1);
  await tick();
  t.same(batches[1]?.keys, ['bb', 'ccc'], 'one batch, each key once');
  batches[1]?.release();
  t.same(await Promise.all(queued), [2, 3, 2]);
});

t.test('a lookup arriving while its key is being fetched waits for a fetch that starts after it', async (t) => {
  const { batches, fetch } = manualFetch();
  const lookup = new BatchedLookup(fetch, () => -1, { maxInFlight: 1, maxBatch: 10 });
  const before = lookup.load('k');
  const during = lookup.load('k');
  t.same(batches.map((b) => b.keys), [['k']], 'the second does not join the fetch already under way');
  batches[0]?.release({ k: 1 });
  t.equal(await before, 1);
  await tick();
  t.same(batches[1]?.keys, ['k'], 'it gets a fetch of its own');
  batches[1]?.release({ k: 2 });
  t.equal(await during, 2, 'and sees what that fetch saw');
});

t.test('batches are capped, run up to maxInFlight at once, and missing keys get the default', async (t) => {
  const { batches, fetch } = manualFetch();
  const lookup = new BatchedLookup(fetch, () => -1, { maxInFlight: 2, maxBatch: 2 });
  const answers = ['x', 'a', 'b', 'c', 'd', 'e'].map((k) => lookup.load(k));
  t.same(batches.map((b) => b.keys), [['x'], ['a']], 'the first two leave at once, one each; the rest queue');
  batches[1]?.release();
  await tick();
  t.same(batches[2]?.keys, ['b', 'c'], 'capped at two keys');
  batches[0]?.release();
  await tick();
  t.same(batches[3]?.keys, ['d', 'e']);
  t.equal(batches.length, 4, 'never more than two in flight');
  batches[2]?.release({ c: 1 });
  batches[3]?.release();
  t.same(await Promise.all(answers), [1, 1, -1, 1, 1, 1], 'b was absent from its answer');
});

t.test('a failed fetch rejects exactly its own batch, and the next batch still runs', async (t) => {
  const { batches, fetch } = manualFetch();
  const lookup = new BatchedLookup(fetch, () => -1, { maxInFlight: 1, maxBatch: 10 });
  const doomed = lookup.load('a');
  const next = lookup.load('b');
  batches[0]?.fail(new Error('connection lost'));
  await t.rejects(doomed, { message: 'connection lost' });
  await tick();
  batches[1]?.release();
  t.equal(await next, 1);
});
