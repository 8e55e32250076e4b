/**
 * Two different (building, room) pairs never share a cooldown: names may hold `:` and `%`, so tenant A's
 * alert for building `acme`, room `hq:lab` once armed the key of tenant B's building `acme:hq`, room
 * `lab` (`alert:temperature:temperature:acme:hq:lab` for both), and B's real alerts were suppressed for
 * 300 s. Checked through the breach path on real Redis, for each way an alert can be suppressed: by Redis
 * (a second replica, nothing in its memory), and from the memory of the replica that armed the first key
 * (the scan of the records' bytes, then `armedHere`; and `armedHere` alone).
 */
import t from 'tap';
import type { Cooldown } from '../../../cloud/notification/redis.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { startHarness, temperatureAlert, type Harness } from './support/harness.js';
import { channelRecorder, redisClient, uniqueName, waitFor, type Teardown } from './support/stack.js';

const directory = await startFakeDirectory(t);
const redis = redisClient(t);

interface Place {
  buildingId: string;
  roomId: string;
}

/** Pairs that one `:`-joined key, or one that escaped `:` but not `%`, would merge. */
const PAIRS: Array<{ what: string; first: Place; second: Place }> = [
  { what: 'room `hq:lab` of `acme`, then room `lab` of `acme:hq`', first: { buildingId: 'acme', roomId: 'hq:lab' }, second: { buildingId: 'acme:hq', roomId: 'lab' } },
  { what: 'room `hq%3Alab` of `acme`, then room `hq:lab`', first: { buildingId: 'acme', roomId: 'hq%3Alab' }, second: { buildingId: 'acme', roomId: 'hq:lab' } },
  { what: 'room `hq:lab` of `acme`, then room `hq%3Alab`', first: { buildingId: 'acme', roomId: 'hq:lab' }, second: { buildingId: 'acme', roomId: 'hq%3Alab' } },
];

directory.set('acme', ['tenant-a']).set('acme:hq', ['tenant-b']);

/** The cooldown without the scan of the records' bytes: a suppression from memory is `armedHere`'s. */
const withoutScan = (real: Cooldown): Cooldown => ({
  armedHere: (key, now) => real.armedHere(key, now),
  forgetArmed: (key) => real.forgetArmed(key),
  armAll: (alerts) => real.armAll(alerts),
});

/** How the second alert is settled: which replica reads it, and so what may suppress it. */
const PATHS: Array<{ what: string; second: (t: Teardown, first: Harness) => Promise<Harness>; wrap?: (real: Cooldown) => Cooldown }> = [
  {
    what: 'by Redis (a second replica)',
    second: (t, first) => startHarness(t, { directory, vapid: first.vapid, shared: { db: first.db, channel: first.channel, keyPrefix: first.keyPrefix } }),
  },
  { what: 'from memory (the scan, then armedHere)', second: async (_, first) => first },
  { what: 'from memory (armedHere alone)', second: async (_, first) => first, wrap: withoutScan },
];

for (const pair of PAIRS) {
  for (const path of PATHS) {
    t.test(`${pair.what}: both delivered, ${path.what}`, async (t) => {
      const first = await startHarness(t, { directory, ...(path.wrap ? { cooldown: path.wrap } : {}) });
      const channel = await channelRecorder(t, first.channel);
      const a = await first.breach.settle([{ value: temperatureAlert(uniqueName('alert'), pair.first.buildingId, pair.first.roomId) }]);
      t.same(a.outcomes, ['delivered'], 'the first alert is delivered and arms its key');
      const second = await path.second(t, first);
      // A later slice: the replica that armed the first key now checks its memory first.
      const b = await second.breach.settle([{ value: temperatureAlert(uniqueName('alert'), pair.second.buildingId, pair.second.roomId) }]);
      t.same(b.outcomes, ['delivered'], 'the second alert, of another room, is delivered too');
      const delivered = [...a.outcomes, ...b.outcomes].filter((o) => o === 'delivered').length;
      await waitFor('a notification per delivered alert', () => channel.messages.length >= delivered);
      const rooms = channel.messages.map((m) => {
        const { buildingId, roomId } = m as Place;
        return { buildingId, roomId };
      });
      t.same(rooms, [pair.first, pair.second], 'one notification for each room');
      const again = await first.breach.settle([{ value: temperatureAlert(uniqueName('alert'), pair.second.buildingId, pair.second.roomId) }]);
      t.same(again.outcomes, ['suppressed'], 'the second room’s own cooldown holds for its next alert');
    });
  }
}

t.test('the seed’s key for ids without `:` or `%`; an escaped part for the others', async (t) => {
  const h = await startHarness(t, { directory });
  const settled = await h.breach.settle([
    { value: temperatureAlert(uniqueName('alert'), 'acme', 'lab') },
    { value: temperatureAlert(uniqueName('alert'), 'acme:hq', 'lab') },
    { value: temperatureAlert(uniqueName('alert'), 'acme', 'hq%3Alab') },
  ]);
  t.same(settled.outcomes, ['delivered', 'delivered', 'delivered']);
  for (const key of ['alert:temperature:temperature:acme:lab', 'alert:temperature:temperature:acme%3Ahq:lab', 'alert:temperature:temperature:acme:hq%253Alab']) {
    t.equal(await redis.exists(`${h.keyPrefix}${key}`), 1, `${key} armed`);
  }
});
