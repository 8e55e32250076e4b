import t from 'tap';
import { startFakeDirectory } from '../../support/fake-directory.js';
import { freePort } from './support/own-redis.js';
import { claimsOf, connectClient, publisher, stackRedisUrl, subscribe, uniqueName, waitFor } from './support/relay-harness.js';
import { startRelayProcess } from './support/relay-process.js';

t.test('SIGTERM closes the sockets and the broker subscription, and exits 0 within the 5 s deadline', async (t) => {
  const directory = await startFakeDirectory(t);
  const notifications = uniqueName('notifications');
  const relay = await startRelayProcess(t, {
    REDIS_URL: stackRedisUrl(),
    DIGITAL_TWIN_URL: directory.url,
    NOTIFICATIONS_CHANNEL: notifications,
    TELEMETRY_CHANNEL_PREFIX: `${uniqueName('telemetry:filtered')}:`,
  });
  const redis = publisher(t);
  const numsub = async () => Number(((await redis.pubsub('NUMSUB', notifications)) as [string, number])[1]);
  t.equal(await numsub(), 1);

  const acme = uniqueName('acme');
  const building = uniqueName('b');
  const slow = uniqueName('b-slow');
  directory.set(building, [acme]);
  directory.set(slow, 'hang');
  const ana = await connectClient(t, relay.url, claimsOf({ sub: 'ana', domains: [acme] }));
  t.same(await subscribe(ana, building), { subscribed: true, buildingId: building });
  ana.socket.emit('subscribe_building', slow);
  await waitFor(() => directory.callsFor(slow) === 1, 'a lookup in flight during the stop');

  const disconnected = new Promise<string>((resolve) => ana.socket.once('disconnect', (reason) => resolve(reason)));
  relay.child.kill('SIGTERM');
  t.same(await relay.exited, { code: 0, signal: null }, 'exit 0: the stop finished before the 5 s deadline (past it, the process exits 1)');
  t.equal(await disconnected, 'transport close', 'the socket was closed');
  t.equal(await numsub(), 0, 'the broker subscription is gone');
  t.ok(relay.logs.some((l) => l.msg === 'stopping' && l.signal === 'SIGTERM'));
  t.ok(relay.logs.some((l) => l.msg === 'stopped'));
});

t.test('SIGTERM while the broker is unreachable still stops cleanly', async (t) => {
  const directory = await startFakeDirectory(t);
  const relay = await startRelayProcess(t, { REDIS_URL: `redis://127.0.0.1:${await freePort()}`, DIGITAL_TWIN_URL: directory.url }, { waitForBroker: false });
  await relay.logged('broker subscription lost; retrying');
  relay.child.kill('SIGTERM');
  t.same(await relay.exited, { code: 0, signal: null });
});

t.test('a configuration error names every problem and exits 2', async (t) => {
  const { spawnSync } = await import('node:child_process');
  const { fileURLToPath } = await import('node:url');
  const result = spawnSync(process.execPath, ['--import', 'tsx', 'cloud/relay/main.ts'], {
    cwd: fileURLToPath(new URL('../../../', import.meta.url)),
    env: { PATH: process.env.PATH ?? '', REDIS_URL: 'http://nope', SOCKET_MAX_LIFETIME_SECS: 'soon' },
    encoding: 'utf8',
  });
  t.equal(result.status, 2);
  t.match(result.stderr, /REDIS_URL: not a redis:\/\/ or rediss:\/\/ URL/);
  t.match(result.stderr, /SOCKET_MAX_LIFETIME_SECS: expected an integer, got "soon"/);
});

t.test('a port already taken is one log line and exit 1, not a stack trace', async (t) => {
  const directory = await startFakeDirectory(t);
  const { spawnSync } = await import('node:child_process');
  const { fileURLToPath } = await import('node:url');
  const taken = new URL(directory.url).port;
  const result = spawnSync(process.execPath, ['--import', 'tsx', 'cloud/relay/main.ts'], {
    cwd: fileURLToPath(new URL('../../../', import.meta.url)),
    env: { PATH: process.env.PATH ?? '', REDIS_URL: stackRedisUrl(), PORT: taken },
    encoding: 'utf8',
    timeout: 30_000,
  });
  t.equal(result.status, 1);
  const line = JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;
  t.match(line, { msg: 'relay failed to start', error: 'Error (EADDRINUSE)' });
  t.notMatch(result.stdout + result.stderr, /\n\s+at /, 'no stack trace');
});
