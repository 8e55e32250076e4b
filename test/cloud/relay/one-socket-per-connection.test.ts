import t from 'tap';
import { startFakeDirectory } from '../../support/fake-directory.js';
import { pollingClient } from './support/polling-client.js';
import { capturedLogger, claimsOf, metric, notification, publisher, startRelay, uniqueName } from './support/relay-harness.js';

t.test('many namespace connects batched in one long-polling body get one socket: the rest are refused, and a notification arrives once', async (t) => {
  const directory = await startFakeDirectory(t);
  const { logger, lines } = capturedLogger();
  const relay = await startRelay(t, { directory, logger });
  const acme = uniqueName('acme');
  const client = await pollingClient(t, relay.url, claimsOf({ sub: uniqueName('ana'), domains: [acme] }));

  // Socket.IO refuses a second CONNECT on a connection only once the first socket has joined, which
  // happens a tick later: every CONNECT of one body reaches the namespace before that.
  const connects = 50;
  await client.post(Array.from({ length: connects }, () => '40'));
  const isAccepted = (p: string) => p.startsWith('40{');
  const isRefused = (p: string) => p.startsWith('44');
  await client.pollUntil((packets) => packets.filter((p) => isAccepted(p) || isRefused(p)).length === connects, 'an answer to every CONNECT');
  t.equal(client.received.filter(isAccepted).length, 1, 'one CONNECT is accepted');
  t.same(
    client.received.filter(isRefused).map((p) => JSON.parse(p.slice(2)) as unknown),
    Array.from({ length: connects - 1 }, () => ({ message: 'unauthorized' })),
    'every other one is refused with unauthorized',
  );
  t.equal(await metric(relay.url, 'socket_connected_clients'), 1, 'one socket is counted as connected');
  t.equal(relay.relay.io.of('/').adapter.rooms.get(`domain:${acme}`)?.size, 1, 'one socket joined the domain room');
  t.equal(relay.relay.io.of('/').sockets.size, 1, 'one socket exists in the namespace');
  t.equal(lines.filter((l) => l.msg === 'handshake rejected' && l.reason === 'second socket on one connection').length, 1, 'the refusals are logged once for the connection');
  t.equal(await metric(relay.url, 'socket_connections_rejected_total'), 0, 'and not counted: that counter is for claims headers');

  const redis = publisher(t);
  const first = notification({ id: uniqueName('first'), domainName: acme });
  const fence = notification({ id: uniqueName('fence'), domainName: acme });
  await redis.publish(relay.channels.notifications, JSON.stringify(first));
  await redis.publish(relay.channels.notifications, JSON.stringify(fence));
  // One connection's packets are written in order: every copy of the first comes before the fence.
  await client.pollUntil((packets) => packets.some((p) => p.includes(fence.id as string)), 'the fence notification');
  t.same(
    client.received.filter((p) => p.startsWith('42')).map((p) => JSON.parse(p.slice(2)) as unknown),
    [
      ['notification', first],
      ['notification', fence],
    ],
    'each notification reaches the connection once',
  );
  t.same(directory.unexpected, []);
});
