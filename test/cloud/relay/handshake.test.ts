import t from 'tap';
import { request } from 'undici';
import { startFakeDirectory } from '../../support/fake-directory.js';
import {
  capturedLogger,
  claimsOf,
  connectClient,
  FRONTEND_ORIGIN,
  metric,
  notification,
  publisher,
  rejectionOf,
  scrapeMetrics,
  startRelay,
  subscribe,
  uniqueName,
  waitFor,
} from './support/relay-harness.js';

t.test('every series of the seed exists at 0 from startup; /health answers 200', async (t) => {
  const directory = await startFakeDirectory(t);
  const { url } = await startRelay(t, { directory });
  const series = await scrapeMetrics(url);
  const expected = [
    'socket_connected_clients',
    'telemetry_relayed_total',
    'notifications_relayed_total{scope="broadcast"}',
    'notifications_relayed_total{scope="domain"}',
    'relay_payload_bytes_total{channel="notifications"}',
    'relay_payload_bytes_total{channel="telemetry"}',
    'relay_messages_skipped_total{channel="notifications"}',
    'relay_messages_skipped_total{channel="telemetry"}',
    'socket_connections_rejected_total',
    'socket_subscriptions_rejected_total{reason="forbidden"}',
    'socket_subscriptions_rejected_total{reason="lookup_failed"}',
    'socket_sessions_expired_total',
  ];
  for (const key of expected) t.equal(series.get(key), 0, key);
  const health = await request(`${url}/health`);
  t.equal(health.statusCode, 200);
  t.same(await health.body.json(), { status: 'ok' });
  const missing = await request(`${url}/nope`);
  t.equal(missing.statusCode, 404);
  t.same(await missing.body.json(), { type: 'Not Found', message: 'no such route' });
  t.same(directory.unexpected, []);
});

t.test('a missing or malformed claims header is refused with unauthorized and counted', async (t) => {
  const directory = await startFakeDirectory(t);
  const { url } = await startRelay(t, { directory });
  const bad: Array<[string, string | undefined]> = [
    ['missing', undefined],
    ['empty', ''],
    ['not base64', '%%%'],
    ['not JSON', Buffer.from('not json').toString('base64')],
    ['not an object', Buffer.from('[1,2]').toString('base64')],
    ['no sub', Buffer.from(JSON.stringify({ accountName: 'a', memberships: [] })).toString('base64')],
    ['sub not a string', Buffer.from(JSON.stringify({ sub: 7 })).toString('base64')],
  ];
  let expected = 0;
  for (const [label, header] of bad) {
    t.equal(await rejectionOf(t, url, header), 'unauthorized', label);
    expected++;
    t.equal(await metric(url, 'socket_connections_rejected_total'), expected, `${label} is counted`);
  }
  t.equal(await metric(url, 'socket_connected_clients'), 0, 'no rejected socket is counted as connected');
});

t.test('no claims header reaches a log line, accepted or refused', async (t) => {
  const directory = await startFakeDirectory(t);
  const { logger, lines } = capturedLogger('debug');
  // Seconds, not milliseconds: the socket must outlast the connect and both subscriptions' lookups on a
  // busy machine, or its expiry cuts the subscriptions short.
  const { url } = await startRelay(t, { directory, logger, maxLifetimeMs: 5_000 });
  const accepted = claimsOf({ sub: uniqueName('ana'), accountName: 'ana@acme.test', domains: [uniqueName('acme')] });
  const refused = Buffer.from(JSON.stringify({ accountName: 'eve@acme.test', memberships: [] })).toString('base64');
  t.equal(await rejectionOf(t, url, refused), 'unauthorized');
  const ana = await connectClient(t, url, accepted);
  const expired = new Promise<void>((resolve) => ana.socket.once('disconnect', () => resolve()));
  const forbidden = uniqueName('b-forbidden');
  const failing = uniqueName('b-500');
  directory.set(forbidden, [uniqueName('globex')]);
  directory.set(failing, { status: 500 });
  t.match(await subscribe(ana, forbidden), { reason: 'forbidden' });
  t.match(await subscribe(ana, failing), { reason: 'lookup_failed' });
  await expired;
  await waitFor(() => lines.some((l) => l.msg === 'socket reached its maximum lifetime'), 'the expiry log line');

  t.match(lines.find((l) => l.msg === 'handshake rejected'), { reason: 'sub missing or not a string' }, 'a refusal logs why');
  t.equal(lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('subscription refused')).length, 2, 'both refusals are logged');
  const text = JSON.stringify(lines);
  t.notOk(text.includes(accepted), 'the accepted header is not logged');
  t.notOk(text.includes(refused), 'the refused header is not logged');
  t.same(directory.unexpected, []);
});

t.test('an accepted socket joins one room per membership, and the gauge follows connects and disconnects', async (t) => {
  const directory = await startFakeDirectory(t);
  const { url, relay, channels } = await startRelay(t, { directory });
  const acme = uniqueName('acme');
  const globex = uniqueName('globex');
  const ana = await connectClient(t, url, claimsOf({ sub: 'ana', accountName: 'ana@acme.test', domains: [acme, globex] }));
  const bob = await connectClient(t, url, claimsOf({ sub: 'bob', domains: [] }));
  t.equal(await metric(url, 'socket_connected_clients'), 2);

  const [serverSocket] = await relay.io.in(`domain:${acme}`).fetchSockets();
  t.ok(serverSocket, 'ana is in her domain room');
  t.same(serverSocket?.data.identity.domains, [acme, globex]);
  t.equal(serverSocket?.data.identity.accountId, 'ana');
  t.equal(serverSocket?.data.identity.accountName, 'ana@acme.test');
  const rooms = [...(relay.io.of('/').adapter.sids.get(bob.socket.id ?? '') ?? [])];
  t.same(rooms, [bob.socket.id], 'a socket without memberships is only in its own id room');

  const redis = publisher(t);
  await redis.publish(channels.notifications, JSON.stringify(notification({ domainName: globex, id: 'to-globex' })));
  await waitFor(() => ana.notifications.length === 1, 'the domain notification');

  bob.socket.close();
  await waitFor(async () => (await metric(url, 'socket_connected_clients')) === 1, 'the gauge to drop');
  t.equal(bob.notifications.length, 0);

  // Past sub, nothing refuses the header (CONTRACTS): a membership that cannot be read is left out.
  const odd = Buffer.from(JSON.stringify({ sub: 'carol', memberships: [{ domainName: 3 }, { domainName: acme, role: 'member' }] })).toString('base64');
  const carol = await connectClient(t, url, odd);
  const carolRooms = [...(relay.io.of('/').adapter.sids.get(carol.socket.id ?? '') ?? [])].sort();
  t.same(carolRooms, [carol.socket.id, `domain:${acme}`].sort(), 'only the readable membership gives a room');
});

t.test('a client cannot choose a room: no join event, no other namespace, no identity change', async (t) => {
  const directory = await startFakeDirectory(t);
  const { url, channels } = await startRelay(t, { directory });
  const acme = uniqueName('acme');
  const other = uniqueName('other');
  const mallory = await connectClient(t, url, claimsOf({ sub: 'mallory', domains: [acme] }));
  for (const event of ['join', 'joinRoom', 'subscribe', 'subscribe_domain']) mallory.socket.emit(event, `domain:${other}`);
  directory.set(`domain:${other}`, [other]);
  const ack = await mallory.socket.timeout(5000).emitWithAck('subscribe_building', `domain:${other}`);
  t.same(ack, { subscribed: false, buildingId: `domain:${other}`, reason: 'forbidden' }, 'a room name is just an unknown building id');
  mallory.socket.emit('unsubscribe_building', `domain:${acme}`);
  t.equal(await rejectionOf(t, url, claimsOf({ sub: 'mallory', domains: [acme] }), { namespace: '/admin' }), 'Invalid namespace');

  const redis = publisher(t);
  await redis.publish(channels.notifications, JSON.stringify(notification({ domainName: other, id: 'secret' })));
  await redis.publish(channels.notifications, JSON.stringify(notification({ domainName: acme, id: 'fence' })));
  await waitFor(() => mallory.notifications.length >= 1, 'the fence');
  t.same(
    mallory.notifications.map((n) => (n as { id: string }).id),
    ['fence'],
    'only her own domain, still joined after unsubscribe_building named it',
  );
  t.same(directory.unexpected, []);
});

t.test('CORS allows only FRONTEND_URL, with credentials; another Origin is refused', async (t) => {
  const directory = await startFakeDirectory(t);
  const { url } = await startRelay(t, { directory });
  const header = claimsOf({ sub: 'ana', domains: [] });
  const allowed = await request(`${url}/socket.io/?EIO=4&transport=polling`, { headers: { origin: FRONTEND_ORIGIN, 'x-gateway-claims': header } });
  t.equal(allowed.statusCode, 200);
  t.equal(allowed.headers['access-control-allow-origin'], FRONTEND_ORIGIN);
  t.equal(allowed.headers['access-control-allow-credentials'], 'true');
  await allowed.body.text();

  const preflight = await request(`${url}/socket.io/?EIO=4&transport=polling`, {
    method: 'OPTIONS',
    headers: { origin: FRONTEND_ORIGIN, 'access-control-request-method': 'POST' },
  });
  t.equal(preflight.headers['access-control-allow-origin'], FRONTEND_ORIGIN);
  await preflight.body.text();

  const foreign = await request(`${url}/socket.io/?EIO=4&transport=polling`, { headers: { origin: 'https://evil.test', 'x-gateway-claims': header } });
  t.equal(foreign.statusCode, 403);
  t.not(foreign.headers['access-control-allow-origin'], 'https://evil.test');
  await foreign.body.text();

  const viaWebsocket = await rejectionOf(t, url, header, { extraHeaders: { origin: 'https://evil.test' } });
  t.equal(viaWebsocket, 'websocket error', 'the websocket upgrade from another site is refused too');
  t.equal(await metric(url, 'socket_connections_rejected_total'), 0, 'an origin refusal is not a claims rejection');
});

t.test('the long-polling transport works too (single replica, or a sticky load balancer)', async (t) => {
  const { io } = await import('socket.io-client');
  const directory = await startFakeDirectory(t);
  const { url, channels } = await startRelay(t, { directory });
  const acme = uniqueName('acme');
  const socket = io(url, { transports: ['polling'], reconnection: false, forceNew: true, extraHeaders: { 'x-gateway-claims': claimsOf({ sub: 'ana', domains: [acme] }) } });
  t.teardown(() => socket.close());
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', reject);
  });
  t.equal(socket.io.engine.transport.name, 'polling');
  const received = new Promise<unknown>((resolve) => socket.once('notification', resolve));
  const redis = publisher(t);
  const sent = notification({ domainName: acme });
  await redis.publish(channels.notifications, JSON.stringify(sent));
  t.same(await received, sent);
});
