import t from 'tap';
import { request } from 'undici';
import { startFakeDirectory } from '../../support/fake-directory.js';
import { capturedLogger, claimsOf, metric, notification, publisher, startRelay, uniqueName, type Teardown } from './support/relay-harness.js';

/** Engine.IO v4 separates the packets of one long-polling body with a record separator. */
const SEPARATOR = '\x1e';

/**
 * A raw Engine.IO v4 long-polling client: a GET opens the connection, each POST carries a payload of
 * packets, each GET returns what the server has waiting (or waits for it). The claims go with the opening
 * request only, as the mesh would inject them.
 */
async function pollingClient(t: Teardown, url: string, header: string) {
  const base = `${url}/socket.io/?EIO=4&transport=polling`;
  const opened = await request(base, { headers: { 'x-gateway-claims': header } });
  const open = await opened.body.text();
  if (!open.startsWith('0{')) throw new Error(`expected an Engine.IO open packet, got ${open.slice(0, 80)}`);
  const { sid } = JSON.parse(open.slice(1)) as { sid: string };
  const session = `${base}&sid=${encodeURIComponent(sid)}`;
  const post = async (packets: string[]): Promise<void> => {
    const response = await request(session, { method: 'POST', body: packets.join(SEPARATOR), headers: { 'content-type': 'text/plain;charset=UTF-8' } });
    const text = await response.body.text();
    if (response.statusCode !== 200 || text !== 'ok') throw new Error(`POST answered ${response.statusCode} ${text}`);
  };
  // 1 = Engine.IO close: ends the connection, and with it any GET still waiting.
  t.teardown(() => post(['1']).catch(() => undefined));
  const received: string[] = [];
  /** One GET; a server ping (2) is answered with a pong (3) so a slow run keeps the connection. */
  const poll = async (): Promise<void> => {
    const response = await request(session);
    const text = await response.body.text();
    if (response.statusCode !== 200) throw new Error(`GET answered ${response.statusCode} ${text}`);
    const packets = text.split(SEPARATOR);
    if (packets.includes('2')) await post(['3']);
    received.push(...packets.filter((p) => p !== '2'));
  };
  /** Polls until `condition` holds over everything received so far. */
  const pollUntil = async (condition: (packets: string[]) => boolean, what: string): Promise<void> => {
    const deadline = Date.now() + 10_000;
    while (!condition(received)) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await poll();
    }
  };
  return { post, received, pollUntil };
}

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
