import t from 'tap';
import { TtlCache } from '../../shared/ttl-cache.js';

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
