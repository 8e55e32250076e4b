import { connect } from 'node:net';
import t from 'tap';
import { MAX_BUFFERED_PACKETS } from '../../../cloud/relay/backlog.js';
import { pollingClient } from './support/polling-client.js';
import { buildingOnRelay, metric, waitFor } from './support/relay-harness.js';

/**
 * Long polling hands the session's whole buffer to each poll's response and counts it written at once,
 * so a client that sent each poll on a new connection and read none of them escaped the backlog cap:
 * what the kernel did not take waited in the relay for as long as the connection stayed, a session's
 * traffic at a time. The connection is destroyed once its unwritten bytes stop going down for 5 s.
 */
t.test('a poll response nobody reads is dropped with its connection, and the relay says so', async (t) => {
  const { relay, lines, redis, acme, building, header } = await buildingOnRelay(t);
  const client = await pollingClient(t, relay.url, header);
  await client.post(['40']);
  await client.pollUntil((packets) => packets.some((p) => p.startsWith('40{')), 'the namespace connect');
  await client.post([`421${JSON.stringify(['subscribe_building', building])}`]);
  await client.pollUntil((packets) => packets.some((p) => p.startsWith('431')), 'the subscribe answer');

  // Fewer packets than the backlog cap, so only the new watch can act: about 29 MB, more than the
  // loopback buffers of a reader that takes nothing.
  const count = MAX_BUFFERED_PACKETS - 100;
  const filler = 'x'.repeat(32 * 1024);
  const pipeline = redis.pipeline();
  for (let i = 0; i < count; i++) pipeline.publish(`${relay.channels.telemetryPrefix}${building}`, JSON.stringify({ i, filler }));
  await pipeline.exec();
  await waitFor(async () => (await metric(relay.url, 'telemetry_relayed_total')) >= count, 'every reading relayed', 60_000);

  // The poll, on a connection of its own, that is never read.
  const { hostname, port } = new URL(relay.url);
  const path = client.session.slice(relay.url.length);
  const unread = connect({ host: hostname, port: Number(port) });
  t.teardown(() => unread.destroy());
  unread.pause();
  unread.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nConnection: keep-alive\r\n\r\n`);

  await waitFor(() => lines.some((line) => line.msg === 'client did not read a poll response; connection destroyed'), 'the unread poll to be dropped', 60_000);
  const dropped = lines.find((line) => line.msg === 'client did not read a poll response; connection destroyed');
  t.ok(typeof dropped?.unwritten === 'number' && dropped.unwritten > 0, 'the bytes it held are logged, nothing else');
  t.notOk(JSON.stringify(dropped).includes(acme), 'no domain or identity in the line');
});
