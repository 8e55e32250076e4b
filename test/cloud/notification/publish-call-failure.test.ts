/**
 * A delivery whose notifications take two publish calls, the second cut off: the alerts of the first
 * call are published and settled, and only the alerts of the failed call are read again and published
 * then. Calls are cut between alerts, so no alert is half published. Before, the whole delivery was
 * taken as failed and released, so the alerts of the first call were published a second time when
 * read again. Real Redis behind a proxy that drops the connection while the second call is sent.
 */
import t from 'tap';
import { startFakeDirectory } from './support/fake-directory.js';
import { startHarness, temperatureAlert } from './support/harness.js';
import { proxiedClient, startRedisProxy } from './support/redis-proxy.js';
import { channelRecorder, redisClient, uniqueName, waitFor } from './support/stack.js';

const directory = await startFakeDirectory(t);
const redis = redisClient(t);

t.test('the second publish call fails: the first call\'s alerts are published once, the rest once when read again', async (t) => {
  const proxy = await startRedisProxy(t);
  // A publishing client that gives up on a command at once when its connection drops.
  const proxied = proxiedClient(t, proxy.url, { maxRetriesPerRequest: 0 });
  const h = await startHarness(t, { directory, publishWith: proxied });
  const recorder = await channelRecorder(t, h.channel);
  // Two buildings of 600 domains each: 1,200 notifications, more than one call holds (1,000).
  const first = uniqueName('b');
  const second = uniqueName('b');
  const domainsOf = (building: string) => Array.from({ length: 600 }, (_, i) => `${building}-d${i}`);
  directory.set(first, domainsOf(first)).set(second, domainsOf(second));
  const records = [
    { value: temperatureAlert(uniqueName('alert'), first, 'r1'), offset: '0' },
    { value: temperatureAlert(uniqueName('alert'), second, 'r1'), offset: '1' },
  ];
  const source = { topic: 'alerts', partition: 0 };

  // The last notification of the second alert is in the second call however the calls are cut.
  proxy.cutBefore(`${second}-d599`);
  const settled = await h.breach.settle(records, source);
  t.equal(proxy.cutCommands, 1, 'a publish call was cut off');
  t.equal(settled.settled, 1, 'the first alert is settled; the second is not');
  t.same(settled.outcomes, ['delivered', undefined]);

  // The consumer reads the unsettled records again.
  const again = await h.breach.settle(records.slice(settled.settled), source);
  t.same(again.outcomes, ['delivered'], 'the second alert is delivered when read again');

  const sentinel = uniqueName('sentinel');
  await redis.publish(h.channel, JSON.stringify({ sentinel }));
  await waitFor('the sentinel', () => recorder.raw.some((m) => m.includes(sentinel)));
  const published = new Map<string, number>();
  for (const message of recorder.messages) {
    const domain = (message as { domainName?: string }).domainName;
    if (domain !== undefined) published.set(domain, (published.get(domain) ?? 0) + 1);
  }
  t.equal(published.size, 1200, 'every domain of both alerts got its notification');
  t.same([...published].filter(([, count]) => count !== 1), [], 'and each exactly once');
  await h.delivery.drain();
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
