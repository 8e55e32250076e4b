/**
 * Two relay processes on one Redis, clients spread over both: each replica subscribes to the broker and
 * emits only to its own sockets, so every client gets what is meant for it exactly once.
 */
import t from 'tap';
import { startFakeDirectory } from '../../support/fake-directory.js';
import { claimsOf, connectClient, metric, notification, publisher, stackRedisUrl, subscribe, uniqueName, waitFor, type Client } from './support/relay-harness.js';
import { startRelayProcess } from './support/relay-process.js';

t.test('two replicas, clients on both: every message meant for a client arrives once, nothing else', async (t) => {
  const directory = await startFakeDirectory(t);
  const notifications = uniqueName('notifications');
  const telemetryPrefix = `${uniqueName('telemetry:filtered')}:`;
  const env = {
    REDIS_URL: stackRedisUrl(),
    DIGITAL_TWIN_URL: directory.url,
    NOTIFICATIONS_CHANNEL: notifications,
    TELEMETRY_CHANNEL_PREFIX: telemetryPrefix,
  };
  const [a, b] = await Promise.all([startRelayProcess(t, env), startRelayProcess(t, env)]);
  const replicas = [a, b];

  const domains = [uniqueName('acme'), uniqueName('globex'), uniqueName('initech')];
  const buildings = [uniqueName('b0'), uniqueName('b1'), uniqueName('b2'), uniqueName('b3')];
  // Building i belongs to domain i % 3.
  buildings.forEach((id, i) => directory.set(id, [domains[i % 3] as string]));

  const clients: Array<{ client: Client; domains: Set<number>; buildings: Set<number>; replica: number }> = [];
  for (let i = 0; i < 12; i++) {
    const replica = i % 2;
    const held = new Set([i % 3, ...(i % 4 === 0 ? [(i + 1) % 3] : [])]);
    const client = await connectClient(t, replicas[replica]!.url, claimsOf({ sub: `acct-${i}`, domains: [...held].map((d) => domains[d] as string) }));
    const joined = new Set<number>();
    for (let bi = 0; bi < buildings.length; bi++) {
      const ack = await subscribe(client, buildings[bi]);
      t.equal(ack.subscribed, held.has(bi % 3), `client ${i} building ${bi}`);
      if (ack.subscribed) joined.add(bi);
    }
    clients.push({ client, domains: held, buildings: joined, replica });
  }

  const redis = publisher(t);
  const numsub = (await redis.pubsub('NUMSUB', notifications)) as [string, number];
  t.equal(Number(numsub[1]), 2, 'each replica holds its own subscription');

  type Sent = { id: string; domain?: number; building?: number };
  const sent: Sent[] = [];
  const pipeline = redis.pipeline();
  for (let seq = 0; seq < 600; seq++) {
    const id = `m${seq}`;
    const pick = seq % 5;
    if (pick < 2) {
      const domain = seq % 3;
      sent.push({ id, domain });
      pipeline.publish(notifications, JSON.stringify(notification({ id, domainName: domains[domain] })));
    } else if (pick === 2) {
      sent.push({ id });
      pipeline.publish(notifications, JSON.stringify(notification({ id })));
    } else {
      const building = seq % buildings.length;
      sent.push({ id, building });
      pipeline.publish(`${telemetryPrefix}${buildings[building]}`, JSON.stringify({ id }));
    }
  }
  pipeline.publish(notifications, JSON.stringify(notification({ id: 'fence' })));
  await pipeline.exec();

  let deliveries = 0;
  for (const [i, { client, domains: held, buildings: joined }] of clients.entries()) {
    await waitFor(() => client.notifications.some((n) => (n as { id: string }).id === 'fence'), `client ${i} fence`);
    const expected = sent
      .filter((m) => (m.building !== undefined ? joined.has(m.building) : m.domain === undefined || held.has(m.domain)))
      .map((m) => m.id)
      .concat('fence')
      .sort();
    const received = [...client.notifications, ...client.telemetry].map((e) => (e as { id: string }).id).sort();
    t.same(received, expected, `client ${i} on replica ${i % 2}: exactly its own messages, once each`);
    deliveries += received.length;
  }
  t.ok(deliveries > 1000, `${deliveries} deliveries checked`);

  // Each replica relayed every broker message once, to its own sockets only.
  for (const [r, replica] of replicas.entries()) {
    t.equal(await metric(replica.url, 'notifications_relayed_total{scope="broadcast"}'), sent.filter((m) => m.building === undefined && m.domain === undefined).length + 1, `replica ${r} broadcasts`);
    t.equal(await metric(replica.url, 'socket_connected_clients'), 6, `replica ${r} holds half the clients`);
  }
  t.same(directory.unexpected, []);
});
