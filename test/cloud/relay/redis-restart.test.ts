import t from 'tap';
import { Redis } from 'ioredis';
import { request } from 'undici';
import { startFakeDirectory } from '../../support/fake-directory.js';
import { ownRedis, type OwnRedis } from './support/own-redis.js';
import { capturedLogger, claimsOf, connectClient, notification, startRelay, subscribe, uniqueName, waitFor, type Client, type Teardown } from './support/relay-harness.js';

/** A publisher that reconnects by itself, for a broker that comes and goes. */
function resilientPublisher(t: Teardown, redis: OwnRedis): Redis {
  const client = new Redis(redis.url, { retryStrategy: () => 50, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  t.teardown(() => client.disconnect());
  return client;
}

/** Publishes until the client receives the notification: a resubscription shows up as delivery again. */
async function deliveredAgain(client: Client, publisher: Redis, channel: string, id: string): Promise<void> {
  await waitFor(
    async () => {
      await publisher.publish(channel, JSON.stringify(notification({ id }))).catch(() => undefined);
      return client.notifications.some((n) => (n as { id: string }).id === id);
    },
    `notification ${id}`,
    20_000,
  );
}

async function healthStatus(url: string): Promise<number> {
  const response = await request(`${url}/health`);
  await response.body.text();
  return response.statusCode;
}

t.test('the subscriber survives a Redis crash mid-stream: /health stays 200, and it resubscribes', async (t) => {
  const directory = await startFakeDirectory(t);
  const redis = await ownRedis(t);
  await redis.start();
  const relay = await startRelay(t, { directory, redisUrl: redis.url });
  const acme = uniqueName('acme');
  const b1 = uniqueName('b1');
  directory.set(b1, [acme]);
  const ana = await connectClient(t, relay.url, claimsOf({ sub: 'ana', domains: [acme] }));
  t.same(await subscribe(ana, b1), { subscribed: true, buildingId: b1 });
  const publisher = resilientPublisher(t, redis);
  await deliveredAgain(ana, publisher, relay.channels.notifications, 'before');

  for (const round of [1, 2]) {
    await redis.kill();
    t.equal(await healthStatus(relay.url), 200, `round ${round}: /health while Redis is down`);
    t.ok(ana.socket.connected, `round ${round}: browsers stay connected`);
    await redis.start();
    await deliveredAgain(ana, publisher, relay.channels.notifications, `after-restart-${round}`);
    const reading = { round };
    await waitFor(
      async () => {
        await publisher.publish(`${relay.channels.telemetryPrefix}${b1}`, JSON.stringify(reading));
        return ana.telemetry.some((r) => (r as { round?: number }).round === round);
      },
      'telemetry through the pattern subscription',
    );
    t.pass(`round ${round}: notifications and telemetry flow again`);
  }
  t.equal(await healthStatus(relay.url), 200);
});

t.test('a Redis that is down at start is retried until it comes up', async (t) => {
  const directory = await startFakeDirectory(t);
  const redis = await ownRedis(t);
  const { logger, lines } = capturedLogger();
  const relay = await startRelay(t, { directory, redisUrl: redis.url, waitForBroker: false, logger });
  t.equal(await healthStatus(relay.url), 200, '/health answers while the broker was never reached');
  const ana = await connectClient(t, relay.url, claimsOf({ sub: 'ana', domains: [] }));
  // Let two attempts fail before the server exists: the loop keeps retrying, not just once.
  const retried = () => lines.filter((l) => l.msg === 'broker subscription lost; retrying');
  await waitFor(() => retried().length >= 2, 'two failed attempts');
  await redis.start();
  await relay.broker.subscribed();
  const publisher = resilientPublisher(t, redis);
  await deliveredAgain(ana, publisher, relay.channels.notifications, 'first');
  t.pass('delivered once Redis came up');
  const retries = retried();
  t.ok(retries.length >= 2, 'each failed attempt is logged');
  t.ok(retries.every((l) => l.retryInMs === 1000 && typeof l.error === 'string'), 'with the 1 s wait and a safe error description');
  t.same(
    retries.map((l) => l.attempt),
    retries.map((_, i) => i + 1),
    'attempts are counted',
  );
  t.ok(lines.some((l) => l.msg === 'broker subscribed'), 'the success is logged');
  t.notOk(JSON.stringify(lines).includes(redis.url), 'the broker URL is not logged');
});

t.test('a subscription killed by the server (CLIENT KILL) is re-established', async (t) => {
  const directory = await startFakeDirectory(t);
  const redis = await ownRedis(t);
  await redis.start();
  const relay = await startRelay(t, { directory, redisUrl: redis.url });
  const ana = await connectClient(t, relay.url, claimsOf({ sub: 'ana', domains: [] }));
  const publisher = resilientPublisher(t, redis);
  await deliveredAgain(ana, publisher, relay.channels.notifications, 'before');
  const killed = await publisher.client('KILL', 'TYPE', 'pubsub');
  t.equal(killed, 1, 'the relay subscription was the one pub/sub client');
  await deliveredAgain(ana, publisher, relay.channels.notifications, 'after');
  const numsub = (await publisher.pubsub('NUMSUB', relay.channels.notifications)) as [string, number];
  t.equal(Number(numsub[1]), 1, 'exactly one subscription again, not a duplicate');
  await publisher.publish(relay.channels.notifications, JSON.stringify(notification({ id: 'single' })));
  await publisher.publish(relay.channels.notifications, JSON.stringify(notification({ id: 'fence' })));
  await waitFor(() => ana.notifications.some((n) => (n as { id: string }).id === 'fence'), 'the fence');
  t.equal(ana.notifications.filter((n) => (n as { id: string }).id === 'single').length, 1, 'one publish, one delivery');
});

t.test('a broker that stops answering without closing is detected by the heartbeat, then resubscribed', async (t) => {
  const directory = await startFakeDirectory(t);
  const redis = await ownRedis(t);
  await redis.start();
  const { logger, lines } = capturedLogger();
  const relay = await startRelay(t, { directory, redisUrl: redis.url, logger, heartbeatMs: 200, setupTimeoutMs: 500 });
  const ana = await connectClient(t, relay.url, claimsOf({ sub: 'ana', domains: [] }));
  const publisher = resilientPublisher(t, redis);
  await deliveredAgain(ana, publisher, relay.channels.notifications, 'before');

  redis.pause();
  await waitFor(() => lines.some((l) => l.error === 'heartbeat unanswered'), 'the heartbeat to give up');
  await waitFor(() => lines.some((l) => l.error === 'no subscription within 500 ms'), 'an attempt against the frozen server to time out');
  t.equal(await healthStatus(relay.url), 200);
  redis.resume();
  await deliveredAgain(ana, publisher, relay.channels.notifications, 'after');
  t.pass('delivered again once the server answers');
});
