import t from 'tap';
import WebSocket from 'ws';
import { MAX_BUFFERED_PACKETS } from '../../../cloud/relay/backlog.js';
import { buildingOnRelay, connectClient, metric, subscribe, waitFor, type Teardown } from './support/relay-harness.js';

/**
 * A raw Engine.IO v4 / Socket.IO v5 client over one websocket, so the test can stop reading while it
 * keeps writing, as a stalled browser tab or a hostile client can.
 */
async function rawClient(t: Teardown, url: string, header: string) {
  const ws = new WebSocket(`${url.replace('http', 'ws')}/socket.io/?EIO=4&transport=websocket`, { headers: { 'x-gateway-claims': header } });
  t.teardown(() => ws.terminate());
  const frames: string[] = [];
  ws.on('message', (data) => frames.push(data.toString()));
  const nextFrame = async (prefix: string) => {
    await waitFor(() => frames.some((f) => f.startsWith(prefix)), `a frame starting ${prefix}`);
    return frames.splice(frames.findIndex((f) => f.startsWith(prefix)), 1)[0] as string;
  };
  await nextFrame('0{'); // Engine.IO open
  ws.send('40'); // Socket.IO connect to the main namespace
  const sid = (JSON.parse((await nextFrame('40')).slice(2)) as { sid: string }).sid;
  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  return { ws, sid, nextFrame, closed };
}

t.test('a consumer that stops reading is dropped once its backlog passes the cap and stops draining; the others get everything', async (t) => {
  const { relay, redis, building, header } = await buildingOnRelay(t);

  const stalled = await rawClient(t, relay.url, header);
  stalled.ws.send(`421${JSON.stringify(['subscribe_building', building])}`);
  t.same(JSON.parse((await stalled.nextFrame('431')).slice(3)), [{ subscribed: true, buildingId: building }]);
  const healthy = await connectClient(t, relay.url, header);
  t.same(await subscribe(healthy, building), { subscribed: true, buildingId: building });

  // The stalled client reads nothing more, but answers heartbeats it never read (a pong is accepted
  // unasked), so Engine.IO's ping timeout alone would never drop it.
  stalled.ws.pause();
  const pong = setInterval(() => stalled.ws.send('3'), 1000);
  t.teardown(() => clearInterval(pong));

  // 16 MB, more than the loopback socket buffers take, so most of it has to wait in the relay.
  const count = 4 * MAX_BUFFERED_PACKETS;
  const filler = 'x'.repeat(4096);
  const pipeline = redis.pipeline();
  for (let i = 0; i < count; i++) pipeline.publish(`${relay.channels.telemetryPrefix}${building}`, JSON.stringify({ i, filler }));
  await pipeline.exec();
  await waitFor(async () => (await metric(relay.url, 'telemetry_relayed_total')) >= count, 'every reading relayed', 60_000);

  await waitFor(() => !relay.relay.io.of('/').sockets.has(stalled.sid), 'the stalled socket to be dropped', 60_000);
  t.notOk(relay.relay.io.of('/').sockets.has(stalled.sid), 'the stalled socket was dropped');
  await waitFor(() => healthy.telemetry.length >= count, 'every reading at the healthy client', 60_000);
  t.equal(healthy.telemetry.length, count, 'the healthy client got each reading once');
  t.ok(healthy.socket.connected, 'the healthy client is still connected');
  t.equal(await metric(relay.url, 'socket_connected_clients'), 1, 'only the healthy client is counted');
  clearInterval(pong);
  stalled.ws.resume();
  await stalled.closed;
  t.pass('the stalled client sees its connection close');
});

t.test('a burst larger than the cap reaches a client that reads: a backlog only counts once it stops draining', async (t) => {
  const { relay, redis, building, header } = await buildingOnRelay(t);
  const healthy = await connectClient(t, relay.url, header);
  t.same(await subscribe(healthy, building), { subscribed: true, buildingId: building });

  // One script publishes the whole burst, as telemetry publishes a 5,000-reading batch: Redis writes the
  // messages back to back and the relay reads many of them per socket read, emitting each at once, so
  // thousands of packets are created before the first write to the client completes.
  const count = 5 * MAX_BUFFERED_PACKETS;
  const channel = `${relay.channels.telemetryPrefix}${building}`;
  await redis.eval(`for i = 1, tonumber(ARGV[1]) do redis.call('PUBLISH', KEYS[1], '{"i":' .. i .. '}') end return 1`, 1, channel, String(count));
  await waitFor(() => healthy.telemetry.length >= count, 'every reading at the client', 60_000);
  t.equal(healthy.telemetry.length, count, 'each reading once');
  t.ok(healthy.socket.connected, 'still connected');
  t.equal(await metric(relay.url, 'socket_connected_clients'), 1);
});
