import t from 'tap';
import WebSocket from 'ws';
import { socketLifetimeMs, MAX_JITTER_MS } from '../../../cloud/relay/lifetime.js';
import { startFakeDirectory } from '../../support/fake-directory.js';
import { claimsOf, connectClient, metric, startRelay, uniqueName, waitFor } from './support/relay-harness.js';

t.test('a socket is dropped up to 10 % of the lifetime early (at most 60 s), never after the maximum', async (t) => {
  t.equal(socketLifetimeMs(900_000, () => 0), 900_000);
  t.equal(socketLifetimeMs(900_000, () => 0.999999), 900_000 - MAX_JITTER_MS);
  t.equal(socketLifetimeMs(10_000, () => 0.5), 9_500);
  t.equal(socketLifetimeMs(10_000, () => 1), 9_000);
  t.equal(socketLifetimeMs(10_000, () => -3), 10_000, 'a bad random source cannot lengthen the lifetime');
  t.equal(socketLifetimeMs(10_000, () => 7), 9_000, 'nor shorten it past the spread');
  const spread = new Set(Array.from({ length: 200 }, () => socketLifetimeMs(900_000)));
  t.ok(spread.size > 100, 'sockets that connect together do not expire together');
  for (const v of spread) t.ok(v >= 840_000 && v <= 900_000, `${v} within bounds`);
});

t.test('a socket is dropped at its maximum lifetime and counted; the client must handshake again', async (t) => {
  const directory = await startFakeDirectory(t);
  // Seconds, not milliseconds: a lifetime shorter than a stall of a busy machine can end before the
  // client has seen its connect, and the disconnect this test waits for would then come unheard.
  const relay = await startRelay(t, { directory, maxLifetimeMs: 5_000, random: () => 0.5 });
  const ana = await connectClient(t, relay.url, claimsOf({ sub: 'ana', domains: ['acme'] }));
  const reason = await new Promise<string>((resolve) => ana.socket.once('disconnect', (r) => resolve(r)));
  t.equal(reason, 'io server disconnect', 'a server-side drop, which socket.io-client does not retry by itself');
  t.equal(ana.socket.active, false, 'the client will not reconnect on its own');
  await waitFor(async () => (await metric(relay.url, 'socket_sessions_expired_total')) === 1, 'the expiry counter');
  t.equal(await metric(relay.url, 'socket_connected_clients'), 0);

  ana.socket.connect();
  await new Promise<void>((resolve) => ana.socket.once('connect', () => resolve()));
  t.ok(ana.socket.connected, 'a new handshake is accepted');
  await new Promise<void>((resolve) => ana.socket.once('disconnect', () => resolve()));
  t.equal(await metric(relay.url, 'socket_sessions_expired_total'), 2);
});

t.test('a socket that leaves first has its timer cleared: no expiry is counted', async (t) => {
  const directory = await startFakeDirectory(t);
  // Long enough that the early socket surely leaves before its own deadline, even on a busy machine.
  const relay = await startRelay(t, { directory, maxLifetimeMs: 5_000, random: () => 0 });
  const early = await connectClient(t, relay.url, claimsOf({ sub: 'early', domains: [] }));
  early.socket.close();
  await waitFor(async () => (await metric(relay.url, 'socket_connected_clients')) === 0, 'the disconnect');
  // A socket connected later expires after the first one's deadline would have passed.
  const late = await connectClient(t, relay.url, claimsOf({ sub: 'late', domains: [] }));
  await new Promise<void>((resolve) => late.socket.once('disconnect', () => resolve()));
  t.equal(await metric(relay.url, 'socket_sessions_expired_total'), 1, 'only the socket that stayed open expired');
});

t.test('stop() clears the lifetime timers of open sockets', async (t) => {
  const directory = await startFakeDirectory(t);
  const relay = await startRelay(t, { directory, maxLifetimeMs: 3_600_000 });
  const ana = await connectClient(t, relay.url, claimsOf({ sub: 'ana', domains: [] }));
  const closed = new Promise<string>((resolve) => ana.socket.once('disconnect', (r) => resolve(r)));
  await relay.relay.stop();
  t.equal(await closed, 'transport close', 'the client sees the server go away and may reconnect elsewhere');
  t.equal((await relay.relay.metrics.sessionsExpired.get()).values[0]?.value, 0, 'a shutdown is not an expiry');
  // The timer was for an hour and is not unref'd: this file only exits in time because stop() cleared it.
});

t.test('leaving the namespace closes the connection: a join again on it cannot renew the claims or the lifetime', async (t) => {
  const directory = await startFakeDirectory(t);
  const relay = await startRelay(t, { directory, maxLifetimeMs: 3_600_000 });
  const ana = await connectClient(t, relay.url, claimsOf({ sub: 'ana', domains: ['acme'] }));
  const engine = ana.socket.io.engine;
  const closed = new Promise<string>((resolve) => engine.once('close', (reason: string) => resolve(reason)));
  const joinedAgain = new Promise<void>((resolve) => {
    engine.on('packet', (packet: { type: string; data?: unknown }) => {
      if (packet.type === 'message' && typeof packet.data === 'string' && packet.data.startsWith('0')) resolve();
    });
  });
  // Raw Socket.IO packets on the same websocket: 1 = disconnect from "/", then 0 = connect to "/".
  engine.write('1');
  await waitFor(async () => (await metric(relay.url, 'socket_connected_clients')) === 0, 'the relay saw the socket leave');
  engine.write('0');
  const first = await Promise.race([closed.then((reason) => `closed: ${reason}`), joinedAgain.then(() => 'joined again')]);
  t.equal(first, 'closed: transport close', 'the relay closed the connection instead of opening a second session on it');
  t.equal(await metric(relay.url, 'socket_connected_clients'), 0, 'no session left');
});

t.test('the lifetime counts from the connection, not the join: a socket that joins after it ran out is dropped at once', async (t) => {
  const directory = await startFakeDirectory(t);
  const relay = await startRelay(t, { directory, maxLifetimeMs: 1_000, random: () => 0 });
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  directory.set(building, [acme]);
  // Raw Engine.IO over one websocket, so the test chooses when to join the namespace.
  const ws = new WebSocket(`${relay.url.replace('http', 'ws')}/socket.io/?EIO=4&transport=websocket`, {
    headers: { 'x-gateway-claims': claimsOf({ sub: 'ana', domains: [acme] }) },
  });
  t.teardown(() => ws.terminate());
  const frames: string[] = [];
  ws.on('message', (data) => frames.push(data.toString()));
  const acked = new Promise<string>((resolve) => ws.on('message', (data) => data.toString().startsWith('431') && resolve('acknowledged a subscription')));
  const closed = new Promise<string>((resolve) => ws.once('close', () => resolve('closed')));
  await waitFor(() => frames.some((f) => f.startsWith('0{')), 'the Engine.IO open');

  // The claims came with the request that opened the connection. Socket.IO lets a client wait up to 45 s
  // before it joins; joining once the lifetime has run out must not start a fresh one.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  ws.send('40');
  await waitFor(() => frames.some((f) => f.startsWith('40{')), 'the namespace CONNECT answer');
  ws.send(`421${JSON.stringify(['subscribe_building', building])}`);
  t.equal(await Promise.race([acked, closed]), 'closed', 'the relay dropped the socket instead of serving it on claims older than the lifetime');
  t.ok(frames.includes('41'), 'a server disconnect, which the app answers with a new handshake');
  t.equal(await metric(relay.url, 'socket_sessions_expired_total'), 1, 'counted as an expiry');
  t.equal(await metric(relay.url, 'socket_connected_clients'), 0);
});
