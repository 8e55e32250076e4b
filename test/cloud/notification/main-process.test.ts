/**
 * The composition root as a process: `vapid-keys` prints a usable pair, bad configuration is reported
 * all at once with exit 2, the service starts on the local stack (database from the MONGO_URI path)
 * and consumes its alerts topic end to end (looking buildings up with the system identity), it keeps
 * serving HTTP while Kafka is unreachable, and it stops on SIGTERM with exit 0: also while joining a
 * broker that never answers, and while pushes are held by a slow push service, keeping what it settled.
 * A /trigger push still held when the HTTP server has closed is waited for and sent, not dropped.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import t from 'tap';
import webpush from 'web-push';
import { decodeClaims } from '../../../shared/claims.js';
import { parseNotification } from '../../../shared/notification.js';
import { vapidProblems } from '../../../cloud/notification/push.js';
import { COLLECTIONS } from '../../../cloud/notification/store.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { startFakePushHost } from './support/fake-push-host.js';
import { browserKeys, call, claims, member } from './support/harness.js';
import { STACK, channelRecorder, freshMongo, freshTopic, producer, uniqueName, waitFor, type Teardown } from './support/stack.js';
import { serviceEnv } from './support/service-env.js';

const MAIN = new URL('../../../cloud/notification/main.ts', import.meta.url).pathname;

function run(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

async function outputOf(child: ChildProcess): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  // 'close', not 'exit': only then has all of the child's output been read.
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
}

/** Starts the service and waits for its "listening" log line. Killed at teardown if still running. */
async function startService(t: Teardown, env: Record<string, string>) {
  const child = run([], { PORT: '0', LOG_LEVEL: 'info', ...env });
  const logs: Array<Record<string, unknown>> = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    try {
      logs.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      logs.push({ msg: line });
    }
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  // 'close', not 'exit': only then has every log line been read, the last ones included.
  const exited = once(child, 'close') as Promise<[number | null]>;
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const listening = await waitFor(
    'the service to listen',
    () => {
      if (child.exitCode !== null) throw new Error(`service exited ${child.exitCode}: ${stderr}`);
      return logs.find((l) => l.msg === 'notification service listening');
    },
    30_000,
  );
  return { url: `http://127.0.0.1:${String(listening.port)}`, logs, child, exited };
}

/**
 * A broker address that accepts connections and never answers a request: a Kafka broker that hangs (or
 * a network that drops its replies). kafkajs waits its request timeout on every attempt.
 */
async function startUnresponsiveBroker(t: Teardown): Promise<{ address: string; readonly connections: number }> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createTcpServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    address: `127.0.0.1:${port}`,
    get connections() {
      return connections;
    },
  };
}

/**
 * A loopback address where nothing listens, so connections to it are refused: port 9 (discard), which
 * no test binds. A port freed for the purpose could be taken by another test meanwhile.
 */
const REFUSED = '127.0.0.1:9';

/** Subscribes a device of a fresh member of `domainName` at a push endpoint that holds every push. */
async function slowDevice(serviceUrl: string, endpoint: string, domainName: string): Promise<string> {
  const { header } = member(domainName, 'ana');
  const res = await call(serviceUrl, 'POST', '/subscribe', { claims: header, body: { subscription: { endpoint, keys: browserKeys() }, domainName } });
  if (res.status !== 201) throw new Error(`subscribe failed: ${JSON.stringify(res.body)}`);
  return header;
}

/** Longer than the whole stop may take, and than the service's push timeout. */
const HELD_MS = 12_000;

t.test('vapid-keys prints a fresh, valid key pair and exits 0', async (t) => {
  const { code, stdout } = await outputOf(run(['vapid-keys'], {}));
  t.equal(code, 0);
  const publicKey = /^VAPID_PUBLIC_KEY=(\S+)$/m.exec(stdout)?.[1];
  const privateKey = /^VAPID_PRIVATE_KEY=(\S+)$/m.exec(stdout)?.[1];
  t.ok(publicKey && privateKey, 'both keys printed as env lines');
  t.same(vapidProblems({ subject: 'mailto:a@b.invalid', publicKey: publicKey!, privateKey: privateKey! }), [], 'they form a valid pair');
});

t.test('bad configuration: every problem named at once, exit 2', async (t) => {
  const mismatched = webpush.generateVAPIDKeys();
  const { code, stderr } = await outputOf(
    run([], {
      PORT: 'eighty',
      MONGO_URI: 'postgres://x/y',
      KAFKA_BROKERS: 'nohostport',
      VAPID_PUBLIC_KEY: mismatched.publicKey,
      VAPID_PRIVATE_KEY: webpush.generateVAPIDKeys().privateKey,
      WEB_PUSH_ALLOW_PRIVATE_DESTINATIONS: 'maybe',
      MIGRATION_STOP_MS: '-1',
      RECORD_LOCK_WAIT_MS: 'ten seconds',
    }),
  );
  t.equal(code, 2);
  t.match(stderr, /PORT: expected an integer/);
  t.match(stderr, /MONGO_URI: not a mongodb:\/\/ or mongodb\+srv:\/\/ URL/);
  t.match(stderr, /KAFKA_BROKERS: expected host:port/);
  t.match(stderr, /VAPID_PUBLIC_KEY: does not belong to VAPID_PRIVATE_KEY/);
  t.match(stderr, /WEB_PUSH_ALLOW_PRIVATE_DESTINATIONS: expected true or false, got "maybe"/);
  t.match(stderr, /MIGRATION_STOP_MS: expected at least 0, got -1/);
  t.match(stderr, /RECORD_LOCK_WAIT_MS: expected an integer, got "ten seconds"/);
});

t.test('Redis unreachable at start: one line naming it and where it was looked for, without the password, exit 1', async (t) => {
  const { uri } = await freshMongo(t);
  const { code, stdout, stderr } = await outputOf(
    run([], { PORT: '0', LOG_LEVEL: 'info', MONGO_URI: uri, REDIS_URL: `redis://:hunter2@${REFUSED}`, KAFKA_BROKERS: STACK.kafkaBrokers.join(','), VAPID_PRIVATE_KEY: 'only-this-one' }),
  );
  t.equal(code, 1);
  t.equal(stderr, `notification service failed to start: DependencyUnreachable: cannot reach Redis at ${REFUSED}: Error\n`);
  t.notMatch(stdout + stderr, /hunter2/, 'the password is not printed');
  const warning = stdout.split('\n').find((l) => l.includes('VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY are not both set'));
  t.match(JSON.parse(warning ?? '{}'), { missing: ['VAPID_PUBLIC_KEY'] }, 'the warning says which key is missing');
});

t.test('starts on the stack, consumes its topic end to end, and stops on SIGTERM', async (t) => {
  const directory = await startFakeDirectory(t);
  const { db, uri } = await freshMongo(t);
  const { topic } = await freshTopic(t, 'alerts', 2);
  const channelName = uniqueName('notifications');
  const channel = await channelRecorder(t, channelName);
  const keys = webpush.generateVAPIDKeys();
  const service = await startService(t, {
    MONGO_URI: uri,
    REDIS_URL: STACK.redisUrl,
    KAFKA_BROKERS: STACK.kafkaBrokers.join(','),
    DIGITAL_TWIN_URL: directory.url,
    VAPID_PUBLIC_KEY: keys.publicKey,
    VAPID_PRIVATE_KEY: keys.privateKey,
    NOTIFICATIONS_CHANNEL: channelName,
    ALERTS_TOPIC: topic,
    ALERTS_GROUP: uniqueName('alerts'),
  });
  t.same(await call(service.url, 'GET', '/public-key'), { status: 200, body: { publicVapidKey: keys.publicKey } });
  const acme = uniqueName('acme');
  const ana = uniqueName('ana');
  const pref = await call(service.url, 'POST', '/preferences', { claims: claims(`sub-${ana}`, ana, [{ domainName: acme, role: 'member' }]), body: { domainName: acme, type: 'airQuality', enabled: true } });
  t.equal(pref.status, 200);
  t.equal(await db.collection(COLLECTIONS.preferences).countDocuments({ accountName: ana }), 1, 'stored in the database named by the MONGO_URI path');
  t.equal(await db.collection(COLLECTIONS.migrations).countDocuments({ state: 'done' }), 2, 'the startup migration left its markers there');

  await waitFor('the consumer to run', () => service.logs.some((l) => l.msg === 'alert consumer running'), 30_000);
  const building = uniqueName('b');
  directory.set(building, [acme]);
  const alert = JSON.stringify({ alertId: uniqueName('alert'), type: 'airQuality', field: 'co2', buildingId: building, roomId: 'r1', value: 1800, bound: 'maxCo2', threshold: 1200 });
  const p = await producer(t);
  await p.send({ topic, messages: [{ key: `${building}:r1`, value: alert }, { key: `${building}:r1`, value: alert }] });
  await waitFor('the in-app notification', () => channel.raw.length >= 1, 30_000);
  const parsed = parseNotification(channel.raw[0]);
  t.ok(parsed.ok);
  if (parsed.ok) t.match(parsed.notification, { kind: 'alert', metric: 'airQuality', field: 'co2', domainName: acme, message: `Maximum CO₂ exceeded in room r1 of building ${building}: 1800 ppm (limit 1200 ppm)` });
  const metrics = await waitFor('both records counted', async () => {
    const text = String((await call(service.url, 'GET', '/metrics')).body);
    return /notification_alerts_consumed_total\{outcome="suppressed",service="notification"\} 1/.test(text) ? text : undefined;
  });
  t.match(metrics, /notification_alerts_consumed_total\{outcome="delivered",service="notification"\} 1/);
  t.equal(channel.raw.length, 1, 'the repeat was suppressed');
  t.same(
    directory.calls.filter((c) => c.buildingId === building).map((c) => decodeClaims(c.claims)),
    [{ ok: true, claims: { sub: 'system:notification-service', memberships: [] } }],
    'the breach path looked the building up once, with the system identity and no memberships',
  );

  service.child.kill('SIGTERM');
  const [code] = await service.exited;
  if (code !== 0) t.comment(JSON.stringify(service.logs.slice(-8)));
  t.equal(code, 0, 'SIGTERM stops it cleanly');
  t.ok(service.logs.some((l) => l.msg === 'stopped'));
});

t.test('keeps serving HTTP while Kafka is unreachable, retrying every 5 seconds', async (t) => {
  const directory = await startFakeDirectory(t);
  const { uri } = await freshMongo(t);
  const service = await startService(t, {
    MONGO_URI: uri,
    REDIS_URL: STACK.redisUrl,
    KAFKA_BROKERS: '127.0.0.1:1',
    DIGITAL_TWIN_URL: directory.url,
    ALERTS_TOPIC: uniqueName('alerts'),
  });
  t.same(await call(service.url, 'GET', '/health'), { status: 200, body: { status: 'ok' } });
  const key = await call(service.url, 'GET', '/public-key');
  t.equal(key.status, 404, 'no VAPID keys: push is not configured');
  t.ok(service.logs.some((l) => /VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY are not both set/.test(String(l.msg))), 'the missing keys are logged');
  await waitFor('the retry to be announced', () => service.logs.some((l) => /alert consumer could not start; retrying in 5000 ms/.test(String(l.msg))), 60_000);
  const ana = uniqueName('ana');
  const acme = uniqueName('acme');
  t.equal((await call(service.url, 'POST', '/preferences', { claims: claims(`sub-${ana}`, ana, [{ domainName: acme, role: 'member' }]), body: { domainName: acme, type: 'temperature', enabled: true } })).status, 200);
  service.child.kill('SIGTERM');
  const [code] = await service.exited;
  t.equal(code, 0);
});

t.test('SIGTERM while joining a broker that never answers, with a /trigger push held: exits 0', async (t) => {
  const keys = webpush.generateVAPIDKeys();
  const host = await startFakePushHost(t, { vapidPublicKey: keys.publicKey });
  const broker = await startUnresponsiveBroker(t);
  const directory = await startFakeDirectory(t);
  const { uri } = await freshMongo(t);
  const service = await startService(t, {
    ...serviceEnv({ mongoUri: uri, directoryUrl: directory.url, vapid: keys, kafkaBrokers: broker.address }),
    ALERTS_TOPIC: uniqueName('alerts'),
  });
  await waitFor('the consumer to be connecting to the broker', () => broker.connections > 0);
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  directory.set(building, [acme]);
  const header = await slowDevice(service.url, host.subscribe('/push/held', 201, { holdMs: HELD_MS }), acme);
  const trigger = call(service.url, 'POST', '/trigger', { claims: header, body: { buildingId: building } }).catch((err: unknown) => err);
  await waitFor('the push to be held by the push service', () => host.calls.length === 1);
  t.notOk(service.logs.some((l) => l.msg === 'alert consumer running'), 'the consumer is still trying to join');

  service.child.kill('SIGTERM');
  const [code] = await service.exited;
  if (code !== 0) t.comment(JSON.stringify(service.logs.slice(-8)));
  t.equal(code, 0, 'SIGTERM stops it cleanly');
  t.ok(service.logs.some((l) => l.msg === 'stopped'));
  await trigger;
});

t.test('SIGTERM with a /trigger push held: the push answered after the HTTP server closed is still sent', async (t) => {
  const keys = webpush.generateVAPIDKeys();
  const host = await startFakePushHost(t, { vapidPublicKey: keys.publicKey });
  const directory = await startFakeDirectory(t);
  const { uri } = await freshMongo(t);
  const service = await startService(t, {
    ...serviceEnv({ mongoUri: uri, directoryUrl: directory.url, vapid: keys, kafkaBrokers: REFUSED }),
    ALERTS_TOPIC: uniqueName('alerts'),
  });
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  directory.set(building, [acme]);
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const header = await slowDevice(service.url, host.subscribe('/push/held', 201, { answerWhen: released }), acme);
  const trigger = call(service.url, 'POST', '/trigger', { claims: header, body: { buildingId: building } }).catch((err: unknown) => err);
  await waitFor('the push to be held by the push service', () => host.calls.length === 1);

  service.child.kill('SIGTERM');
  t.type(await trigger, Error, 'the stopping HTTP server closed the /trigger connection without an answer');
  release();
  const [code] = await service.exited;
  if (code !== 0) t.comment(JSON.stringify(service.logs.slice(-8)));
  t.equal(code, 0, 'SIGTERM stops it cleanly');
  t.match(
    service.logs.find((l) => l.msg === 'manual alert delivered'),
    { buildingId: building, push: 1 },
    'the push service answered the push 201 after the HTTP server closed, and the push counted as sent',
  );
  t.same(service.logs.filter((l) => l.msg === 'push failed; subscription kept'), [], 'the push was not cut off as unreachable');
  t.notOk(service.logs.some((l) => /push fan-outs still running/.test(String(l.msg))), 'nothing was left to drop');
  t.same(host.calls, ['/push/held'], 'one push, not retried');
});

t.test('SIGTERM mid-slice, with a breach push and a /trigger push held by a slow push service: exits 0, every settled record committed', async (t) => {
  const keys = webpush.generateVAPIDKeys();
  const host = await startFakePushHost(t, { vapidPublicKey: keys.publicKey });
  const directory = await startFakeDirectory(t);
  const { uri } = await freshMongo(t);
  const { topic, admin } = await freshTopic(t, 'alerts', 1);
  const groupId = uniqueName('alerts');
  const channelName = uniqueName('notifications');
  const channel = await channelRecorder(t, channelName);
  const service = await startService(t, {
    ...serviceEnv({ mongoUri: uri, directoryUrl: directory.url, vapid: keys }),
    NOTIFICATIONS_CHANNEL: channelName,
    ALERTS_TOPIC: topic,
    ALERTS_GROUP: groupId,
  });
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  directory.set(building, [acme]);
  const header = await slowDevice(service.url, host.subscribe('/push/held', 201, { holdMs: HELD_MS }), acme);
  await waitFor('the consumer to run', () => service.logs.some((l) => l.msg === 'alert consumer running'), 30_000);

  const alert = JSON.stringify({ alertId: uniqueName('alert'), type: 'temperature', field: 'temperature', buildingId: building, roomId: 'r1', value: 31, threshold: 28 });
  const p = await producer(t);
  await p.send({ topic, messages: [{ key: `${building}:r1`, value: alert }] });
  await waitFor('the in-app notification', () => channel.raw.length === 1, 30_000);
  await waitFor('the breach push to be held by the push service', () => host.calls.length === 1, 30_000);
  const trigger = call(service.url, 'POST', '/trigger', { claims: header, body: { buildingId: building } }).catch((err: unknown) => err);
  await waitFor('the /trigger push to be held too', () => host.calls.length === 2);
  // A slice still settling when the signal comes: its building lookup hangs.
  const unanswered = uniqueName('b-hang');
  directory.set(unanswered, 'hang');
  await p.send({ topic, messages: [{ key: `${unanswered}:r1`, value: JSON.stringify({ alertId: uniqueName('alert'), type: 'temperature', field: 'temperature', buildingId: unanswered, roomId: 'r1' }) }] });
  await waitFor('the lookup of the second alert', () => directory.callsFor(unanswered) === 1, 30_000);

  service.child.kill('SIGTERM');
  await waitFor('the service to begin stopping', () => service.logs.some((l) => l.msg === 'stopping'), 30_000);
  // Once the stop is under way, the directory goes away: the lookup fails at once. Left to wait out its
  // 2 s timeout, it would take most of the 3.8 s the consumer is waited for, and a busy machine the rest.
  directory.dropHanging();
  const [code] = await service.exited;
  if (code !== 0) t.comment(JSON.stringify(service.logs.slice(-8)));
  t.equal(code, 0, 'SIGTERM stops it cleanly');
  t.ok(service.logs.some((l) => l.msg === 'stopped'));
  await trigger;
  const unscoped = channel.messages.filter((m) => (m as { buildingId?: string }).buildingId === unanswered);
  t.match(unscoped, [{ kind: 'alert', buildingId: unanswered }], 'the slice in progress was settled: its alert published');
  t.notOk(unscoped.some((m) => 'domainName' in (m as object)), 'unscoped, its lookup having failed');
  const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
  t.same(committed?.partitions.map((c) => c.offset), ['2'], 'both settled records are committed: neither is read again');
});
