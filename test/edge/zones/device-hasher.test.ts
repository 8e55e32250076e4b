import t from 'tap';
import { createHmac } from 'node:crypto';
import { createDeviceHasher } from '../../../edge/src/zones/device-key.js';

const KEY = Buffer.alloc(32, 9);
const hmacOf = (mac: string) => createHmac('sha256', KEY).update(mac).digest('hex');

t.test('a device id is the keyed HMAC of the canonical MAC, cached or not', async (t) => {
  const hasher = createDeviceHasher(KEY);
  const expected = hmacOf('aa:bb:cc:dd:ee:0f');
  t.equal(hasher.idOf('aa:bb:cc:dd:ee:0f'), expected, 'first ask: computed');
  t.equal(hasher.idOf('aa:bb:cc:dd:ee:0f'), expected, 'second ask: from the cache');
  t.equal(hasher.idOf('AA-BB-CC-DD-EE-0F'), expected, 'another spelling');
  t.equal(hasher.idOf('aabb.ccdd.ee0f'), expected, 'the dotted spelling');
  hasher.sweep();
  t.equal(hasher.idOf('aa:bb:cc:dd:ee:0f'), expected, 'after a sweep');
  t.not(createDeviceHasher(Buffer.alloc(32, 1)).idOf('aa:bb:cc:dd:ee:0f'), expected, 'another key, another id');
});

t.test('the cache holds the MACs of the last two polls, no more', async (t) => {
  const hasher = createDeviceHasher(KEY);
  const mac = (i: number) => `02:00:00:00:${((i >> 8) & 255).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`;
  // poll 1: 100 MACs, each asked twice (two APs hear every device)
  for (let i = 0; i < 100; i++) for (let ap = 0; ap < 2; ap++) hasher.idOf(mac(i));
  t.equal(hasher.cachedMacs(), 100);
  hasher.sweep();
  t.equal(hasher.cachedMacs(), 100, 'kept for the next poll');
  // poll 2: half of them again, 100 new ones (randomised MACs come and go)
  for (let i = 50; i < 200; i++) hasher.idOf(mac(i));
  t.equal(hasher.cachedMacs(), 200);
  hasher.sweep();
  t.equal(hasher.cachedMacs(), 150, 'the MACs not asked for in poll 2 are forgotten');
  // a poll that asks for nothing forgets everything at its sweep
  hasher.sweep();
  t.equal(hasher.cachedMacs(), 0, 'after a poll that asked for nothing, the cache is empty');
  t.equal(hasher.idOf(mac(7)), hmacOf(mac(7)), 'a forgotten MAC hashes to the same id again');
});

t.test('a steady building keeps a steady cache over many polls', async (t) => {
  const hasher = createDeviceHasher(KEY);
  const sizes = new Set<number>();
  for (let poll = 0; poll < 50; poll++) {
    // 300 resident devices and 20 passers-by with a new random MAC every poll
    for (let i = 0; i < 300; i++) hasher.idOf(`02:00:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`);
    for (let i = 0; i < 20; i++) hasher.idOf(`06:${poll.toString(16).padStart(2, '0')}:00:00:00:${i.toString(16).padStart(2, '0')}`);
    hasher.sweep();
    sizes.add(hasher.cachedMacs());
  }
  t.same([...sizes], [320], 'residents plus one poll of passers-by');
});
