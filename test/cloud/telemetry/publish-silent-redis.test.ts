/**
 * A Redis that stays connected but stops answering (a network that drops packets): the publications
 * waiting for it are capped, ingest keeps answering, and the service still stops. The proxy of the
 * notification tests holds Redis's replies back: Redis still runs the commands, the client never hears.
 */
import { Redis } from 'ioredis';
import t from 'tap';
import { sign } from '../../../shared/hmac.js';
import { createLogger } from '../../../shared/logger.js';
import { PUBLISHING_REDIS_OPTIONS } from '../../../cloud/telemetry/broker/redis-publisher.js';
import { startRedisProxy } from '../notification/support/redis-proxy.js';
import { freshPgDatabase } from './support/database.js';
import { call, countRows, peopleReading, postSigned, startHarness, subscribe, until } from './support/harness.js';
import { deleteTopicsAtTeardown, stackBrokers, uniqueName } from './support/kafka.js';
import { listeningPort, runScript } from './support/process.js';

interface LogLine {
  level: number;
  msg: string;
  dropped?: number;
}

t.test('while Redis holds its replies, ingest answers 200 and publications past the cap are counted as failed, not queued', async (t) => {
  const proxy = await startRedisProxy(t);
  // No timeouts on this client: a held publication waits as long as the test holds the replies, so the
  // cap alone decides what else is published.
  const redis = new Redis(proxy.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  redis.on('error', () => undefined);
  t.teardown(() => redis.quit().catch(() => redis.disconnect()));
  const lines: LogLine[] = [];
  const logger = createLogger('telemetry', { destination: { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) } });
  // One byte: a single publication in flight fills it.
  const h = await startHarness(t, { redis, maxPublishingBytes: 1, logger });
  const published = await subscribe(t, h.redisUrl, [h.channels.raw]);
  const rooms = () => published.map((m) => (m.message as { roomId: string }).roomId);
  const failures = async () => (await h.metrics.publishFailures.get()).values[0]?.value ?? 0;
  const post = async (roomId: string) => (await postSigned(h, { readings: [peopleReading('b1', roomId, h.clock.now, 3)] })).status;

  t.equal(await post('r0'), 200);
  await until(() => published.length === 1, 5000, 'the first publication');

  proxy.holdRepliesAfter(h.channels.raw);
  t.teardown(() => proxy.releaseReplies());
  t.equal(await post('r1'), 200, 'a batch whose publication Redis does not answer is accepted');
  await until(() => proxy.holding, 5000, 'the publication to be sent and its reply held');
  t.same([await post('r2'), await post('r3')], [200, 200], 'ingest keeps answering with the cap reached');
  t.equal(await failures(), 2, 'the two publications past the cap are counted as failed');
  t.equal(lines.filter((l) => /not published until it does/.test(l.msg)).length, 1, 'the burst is logged once');
  t.equal(await countRows(h.pool, 'readings'), 4, 'every reading is stored');

  proxy.releaseReplies();
  await h.ingest.drain();
  t.equal(await post('r4'), 200);
  await until(() => rooms().includes('r4'), 5000, 'the publication after the burst');
  t.same(rooms(), ['r0', 'r1', 'r4'], 'the dropped publications were never sent, not even late');
  t.equal(await failures(), 2);
  t.match(
    lines.find((l) => /publishing readings on Redis again/.test(l.msg)),
    { dropped: 2 },
    'the end of the burst is logged with what it dropped',
  );
});

t.test('a connection that stops answering is given up on: its publication fails, and the next go out on a new connection', async (t) => {
  const proxy = await startRedisProxy(t);
  // The service's own client options.
  const redis = new Redis(proxy.url, PUBLISHING_REDIS_OPTIONS);
  redis.on('error', () => undefined);
  t.teardown(() => redis.quit().catch(() => redis.disconnect()));
  const h = await startHarness(t, { redis });
  const published = await subscribe(t, h.redisUrl, [h.channels.raw]);
  const rooms = () => published.map((m) => (m.message as { roomId: string }).roomId);
  const failures = async () => (await h.metrics.publishFailures.get()).values[0]?.value ?? 0;
  const post = async (roomId: string) => (await postSigned(h, { readings: [peopleReading('b1', roomId, h.clock.now, 3)] })).status;

  proxy.holdRepliesAfter(h.channels.raw);
  t.teardown(() => proxy.releaseReplies());
  t.equal(await post('r1'), 200);
  await until(() => proxy.holding, 5000, 'the publication to be sent and its reply held');
  await h.ingest.drain();
  t.equal(await failures(), 1, 'the publication Redis never answered ended as a failure, and the drain with it');

  // Redis runs what the proxy holds the replies to, so only the client can tell a publication went
  // through. The proxy passes later connections on untouched: once the silent one is closed, one does.
  let next = 1;
  await until(
    async () => {
      const before = await failures();
      t.equal(await post(`r${++next}`), 200);
      await h.ingest.drain();
      return (await failures()) === before;
    },
    20_000,
    'a publication Redis answers, on a new connection',
  );
  await until(() => rooms().includes(`r${next}`), 5000, 'its message');
  t.equal(rooms().filter((room) => room === 'r1').length, 1, 'the call given up on was not sent again on the new connection (Redis had run it)');
});

t.test('npm run telemetry with Redis holding its replies: the held publication fails and SIGTERM stops it cleanly', async (t) => {
  const databaseUrl = await freshPgDatabase(t);
  const proxy = await startRedisProxy(t);
  t.teardown(() => proxy.releaseReplies());
  const suffix = uniqueName('silent-redis');
  deleteTopicsAtTeardown(t, suffix);
  const raw = `${suffix}:raw`;
  const service = runScript('cloud/telemetry/main.ts', [], {
    PORT: '0',
    DATABASE_URL: databaseUrl,
    REDIS_URL: proxy.url,
    KAFKA_BROKERS: stackBrokers().join(','),
    INGEST_SIGNING_SECRET: 'silent-redis-test-secret',
    ALERTS_TOPIC: `${suffix}-alerts`,
    REGISTRATIONS_TOPIC: `${suffix}-registrations`,
    REGISTRATIONS_GROUP: suffix,
    RAW_CHANNEL: raw,
    FILTERED_CHANNEL_PREFIX: `${suffix}:filtered:`,
  });
  t.teardown(() => {
    if (service.child.exitCode === null) service.child.kill('SIGKILL');
  });
  const port = await listeningPort(service);
  t.ok(port, 'listening');
  const ingest = (roomId: string) => {
    const body = JSON.stringify({ readings: [peopleReading('b1', roomId, Date.now(), 6)] });
    return call(`http://127.0.0.1:${port}/ingest`, 'POST', body, { 'content-type': 'application/json', 'x-signature': sign(body, 'silent-redis-test-secret') });
  };

  proxy.holdRepliesAfter(raw);
  t.equal((await ingest('r1')).status, 200);
  await until(() => proxy.holding, 10_000, 'the publication to be sent and its reply held');
  t.equal((await ingest('r2')).status, 200, 'ingest answers while the publication waits');

  service.child.kill('SIGTERM');
  t.equal(await service.exited, 0, 'the stop finished: the drain did not wait for the held reply');
  t.match(service.out(), /"msg":"stopped"/);
  t.notMatch(service.out(), /stop took too long/);
  t.match(service.out(), /publishing readings on Redis failed; they are stored/, 'the held publication ended as a failure');
});
