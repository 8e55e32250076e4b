import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { TtlCache } from '../../shared/ttl-cache.js';
import { steppableWallClock } from '../support/wall-clock.js';

const YEAR_MS = 365 * 24 * 3_600_000;

t.test('entries expire after their TTL on the injected clock', async (t) => {
  let now = 0;
  const cache = new TtlCache<number>(1000, () => now);
  cache.set('a', 1);
  now = 999;
  t.equal(cache.get('a'), 1);
  now = 1000;
  t.equal(cache.get('a'), undefined);
  t.equal(cache.size, 0, 'an expired entry is removed on read');
});

t.test('the oldest entry is evicted past the cap; delete and clear', async (t) => {
  const cache = new TtlCache<string>(10_000, () => 0, 2);
  cache.set('a', 'A');
  cache.set('b', 'B');
  cache.set('c', 'C');
  t.equal(cache.get('a'), undefined);
  t.equal(cache.get('c'), 'C');
  cache.delete('c');
  t.equal(cache.get('c'), undefined);
  cache.clear();
  t.equal(cache.size, 0);
});

t.test('by default an entry set while the wall clock ran ahead expires after its TTL once NTP sets the clock back', async (t) => {
  // On the wall clock, a step back of D kept every entry D longer: a revoked ingest key trusted for D more.
  const wallClock = steppableWallClock(t);
  const cache = new TtlCache<string>(50);
  wallClock.step(80 * YEAR_MS);
  cache.set('key', 'trusted');
  t.equal(cache.get('key'), 'trusted');
  wallClock.reset();
  // Timers run on the monotonic clock: past this, the TTL has passed.
  await sleep(100);
  t.equal(cache.get('key'), undefined, 'expired after its 50 ms, not 80 years');
});

t.test('on an injected wall clock stepped back, an entry is dropped instead of kept for the step', async (t) => {
  let now = 10_000;
  const cache = new TtlCache<string>(1000, () => now);
  cache.set('key', 'trusted');
  now -= 3_600_000;
  t.equal(cache.get('key'), undefined, 'its age is unknown, so it is asked again');
  t.equal(cache.size, 0, 'and it is removed');
  cache.set('key', 'fresh');
  now += 999;
  t.equal(cache.get('key'), 'fresh', 'an entry set after the step lives its TTL from then');
});
