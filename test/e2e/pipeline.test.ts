/**
 * The services connected, on the real stack. Telemetry, notification and the socket relay run as their
 * own processes (their composition roots, configured by environment as in a deployment) and meet only
 * where CONTRACTS.md says they do: Redis channels `telemetry:filtered:{buildingId}` and `notifications`,
 * and the Kafka topic `alerts`. A socket.io client with the mesh's claims header stands in for the
 * browser; the building directory is a fake. Every channel, topic, group and database is unique to
 * the test. Covered: the live view, a breach scoped to its building's domains, a breach in a building
 * with no domains (unscoped, to every socket), and a manual alert through notification's POST /trigger.
 *
 * Absence is proven by ordering, never by waiting for silence: Redis delivers one subscriber's messages
 * in publish order and the relay emits them in that order on each websocket, so once a later message
 * has arrived, anything published before it that was going to arrive has arrived too.
 */
import t, { type Test } from 'tap';
import { decodeClaims, encodeClaims } from '../../shared/claims.js';
import { readEnv } from '../../shared/env.js';
import { TELEMETRY_ENV } from '../../cloud/telemetry/config.js';
import { readRelayConfig } from '../../cloud/relay/config.js';
import { telemetryPattern } from '../../cloud/relay/routing.js';
import { NOTIFICATIONS_CHANNEL } from '../../cloud/notification/redis.js';
import { ALERTS_TOPIC } from '../../cloud/notification/kafka.js';
import { startFakeDirectory } from '../support/fake-directory.js';
import { freshMongoUri, freshPgDatabase, uniqueName, type Teardown } from '../support/stack.js';
import {
  callAs,
  claimsOf,
  deleteAlertKeysAtTeardown,
  kafkaSpace,
  metricValue,
  openSocket,
  pipelineNames,
  postSigned,
  startNotification,
  startRelay,
  startTelemetry,
  subscribeBuilding,
  waitFor,
} from './support/services.js';

const SECRET = 'pipeline-ingest-secret-0123456789';

/**
 * What every test starts with: the fake directory, first (it fails the test at teardown on a call it
 * was not set up for, which must skip no cleanup), the names of the test's links, two tenants, and
 * `building`, which names a building and sets the directory's answer for it.
 */
async function setUp(t: Teardown) {
  const directory = await startFakeDirectory(t);
  const building = (prefix: string, domains: string[]): string => {
    const buildingId = uniqueName(prefix);
    directory.set(buildingId, domains);
    return buildingId;
  };
  return { directory, names: pipelineNames(), acme: uniqueName('acme'), globex: uniqueName('globex'), building };
}

/** Sets a building's temperature bound through telemetry's thresholds route (PUT, building level) as `claims`. */
async function setMaxTemperature(t: Test, telemetryUrl: string, claims: string, buildingId: string, maxTemperature: number, what: string): Promise<void> {
  t.strictSame(
    await callAs(`${telemetryUrl}/thresholds/buildings/${buildingId}`, claims, 'PUT', { temperature: { maxTemperature } }),
    { status: 200, json: { buildingId, thresholds: { temperature: { maxTemperature } } } },
    what,
  );
}

/** The sub the directory saw a lookup made with (undefined for a header that does not decode). */
function subOf(claims: string | undefined): string | undefined {
  const decoded = decodeClaims(claims);
  return decoded.ok ? decoded.claims.sub : undefined;
}

t.test('live telemetry: a signed batch for building B reaches the socket subscribed to B as the browser view; C’s reading does not', async (t) => {
  const { directory, names, acme, globex, building } = await setUp(t);
  const buildingB = building('tower', [acme]);
  const buildingC = building('depot', [globex]);

  await kafkaSpace(t, { topics: [names.alertsTopic, names.registrationsTopic], groups: [names.registrationsGroup] });
  const telemetry = await startTelemetry(t, { names, databaseUrl: await freshPgDatabase(t), directoryUrl: directory.url, secret: SECRET });
  const relay = await startRelay(t, { names, directoryUrl: directory.url });

  const ana = claimsOf(uniqueName('ana'), acme, 'viewer');
  const gus = claimsOf(uniqueName('gus'), globex, 'viewer');
  const anaSocket = await openSocket(t, relay.url, ana);
  const gusSocket = await openSocket(t, relay.url, gus);
  t.strictSame(await subscribeBuilding(gusSocket, buildingC), { subscribed: true, buildingId: buildingC }, 'gus watches C, a building of his domain');
  t.strictSame(await subscribeBuilding(anaSocket, buildingB), { subscribed: true, buildingId: buildingB }, 'ana watches B, a building of her domain');
  t.strictSame(
    await subscribeBuilding(anaSocket, buildingC),
    { subscribed: false, buildingId: buildingC, reason: 'forbidden' },
    'ana may not watch C, a building of another tenant',
  );
  t.strictSame(
    directory.calls.map((c) => [c.buildingId, c.claims]),
    [
      [buildingC, gus],
      [buildingB, ana],
    ],
    'the relay looked each building up once, forwarding the subscriber’s claims verbatim (its 60 s cache answered ana’s try on C)',
  );

  // Readings as a gateway posts them: every field a declared one (ingest refuses any other).
  const now = Date.now();
  const readingC1 = { type: 'temperature', buildingId: buildingC, roomId: 'dock-1', timestamp: now - 3000, temperature: 17.25, sensorId: 'c-sensor-1' };
  const readingB = { type: 'temperature', buildingId: buildingB, roomId: 'room-101', timestamp: now - 2000, temperature: 22.5, humidity: 41, sensorId: 'b-sensor-1' };
  const readingC2 = { type: 'temperature', buildingId: buildingC, roomId: 'dock-1', timestamp: now - 1000, temperature: 17.5 };

  // C first, then B, then C again; each answered only once it is stored and handed to Redis.
  t.strictSame(await postSigned(telemetry.url, { readings: [readingC1] }, SECRET), { status: 200, json: { accepted: 1 } }, 'C’s first batch accepted');
  t.strictSame(
    await postSigned(telemetry.url, { batchId: uniqueName('batch'), readings: [readingB] }, SECRET),
    { status: 200, json: { accepted: 1 } },
    'B’s batch accepted',
  );
  t.strictSame(await postSigned(telemetry.url, { readings: [readingC2] }, SECRET), { status: 200, json: { accepted: 1 } }, 'C’s second batch accepted');

  await waitFor('B’s reading at ana’s socket', () => anaSocket.telemetry.some((r) => r.buildingId === buildingB));
  t.strictSame(
    anaSocket.telemetry,
    [{ type: 'temperature', buildingId: buildingB, roomId: 'room-101', timestamp: now - 2000, temperature: 22.5, humidity: 41, sensorId: 'b-sensor-1' }],
    'B’s reading arrived as the browser view (the metric key and its declared fields, no batch envelope), and C’s reading, published before it, did not',
  );

  await waitFor('C’s second reading at gus’s socket', () => gusSocket.telemetry.some((r) => r.timestamp === readingC2.timestamp));
  t.strictSame(gusSocket.telemetry, [readingC1, readingC2], 'C’s readings reached C’s watcher, in order; B’s, published between them, did not');
  t.same(anaSocket.notifications, [], 'no notification on this path');
  t.same(gusSocket.notifications, []);
});

t.test('alerts end to end: a breach in B becomes an in-app notification at the sockets of B’s domain, and of no other tenant', async (t) => {
  const { directory, names, acme, globex, building } = await setUp(t);
  const buildingB = building('tower', [acme]);
  const buildingC = building('depot', [globex]);

  const kafka = await kafkaSpace(t, { topics: [names.alertsTopic, names.registrationsTopic], groups: [names.registrationsGroup, names.alertsGroup] });
  const alerts = await kafka.collect(names.alertsTopic);
  deleteAlertKeysAtTeardown(t, [buildingB, buildingC], () => alerts.map((m) => String(m.value.alertId)));
  const telemetry = await startTelemetry(t, { names, databaseUrl: await freshPgDatabase(t), directoryUrl: directory.url, secret: SECRET });
  await startNotification(t, { names, mongoUri: await freshMongoUri(t), directoryUrl: directory.url });
  const relay = await startRelay(t, { names, directoryUrl: directory.url });

  // Each building's facility manager sets its temperature bound through telemetry's thresholds route.
  const acmeManager = claimsOf(uniqueName('fm-acme'), acme, 'facility_manager');
  const globexManager = claimsOf(uniqueName('fm-globex'), globex, 'facility_manager');
  await setMaxTemperature(t, telemetry.url, acmeManager, buildingB, 26, 'B’s bound set');
  await setMaxTemperature(t, telemetry.url, globexManager, buildingC, 20, 'C’s bound set');

  // Browsers of each tenant: domain rooms are joined at connect, no subscription needed for notifications.
  const ana = await openSocket(t, relay.url, claimsOf(uniqueName('ana'), acme, 'viewer'));
  const gus = await openSocket(t, relay.url, claimsOf(uniqueName('gus'), globex, 'viewer'));

  const now = Date.now();
  t.strictSame(
    await postSigned(telemetry.url, { readings: [{ type: 'temperature', buildingId: buildingB, roomId: 'room-101', timestamp: now - 3000, temperature: 31.5 }] }, SECRET),
    { status: 200, json: { accepted: 1 } },
    'a reading over B’s bound accepted',
  );
  await waitFor('the notification of B’s breach at ana’s socket', () => ana.notifications.some((n) => n.roomId === 'room-101'));
  t.equal(ana.notifications.length, 1, 'one notification for one breach');
  const first = ana.notifications[0] as Record<string, unknown>;
  t.strictSame(
    Object.keys(first).sort(),
    ['buildingId', 'createdAt', 'domainName', 'field', 'id', 'kind', 'message', 'metric', 'roomId', 'severity', 'title'],
    'the shared notification schema (CONTRACTS.md, Notification), every optional field present',
  );
  t.match(
    first,
    { kind: 'alert', buildingId: buildingB, roomId: 'room-101', metric: 'temperature', field: 'temperature', domainName: acme },
    'an alert for B’s room and metric, scoped to B’s domain',
  );
  t.ok(['info', 'warning', 'danger'].includes(String(first.severity)), 'a severity of the contract');
  t.match(first.message, /\b31\.5\b/, 'the message carries the breaching value');
  t.match(first.message, /\b26\b/, 'and the bound it broke');
  t.ok(typeof first.id === 'string' && first.id !== '', 'an id');
  t.ok(typeof first.createdAt === 'string' && !Number.isNaN(Date.parse(first.createdAt)), 'a timestamp');

  // The other tenant's building breaches after B's notification was out: once gus has C's, he would
  // also have had B's, had the relay sent it to him.
  t.strictSame(
    await postSigned(telemetry.url, { readings: [{ type: 'temperature', buildingId: buildingC, roomId: 'dock-1', timestamp: now - 2000, temperature: 24.75 }] }, SECRET),
    { status: 200, json: { accepted: 1 } },
    'a reading over C’s bound accepted',
  );
  await waitFor('the notification of C’s breach at gus’s socket', () => gus.notifications.some((n) => n.buildingId === buildingC));
  t.strictSame(
    gus.notifications.map((n) => [n.buildingId, n.roomId]),
    [[buildingC, 'dock-1']],
    'gus got nothing of B’s breach',
  );
  t.match(gus.notifications[0], { kind: 'alert', buildingId: buildingC, roomId: 'dock-1', metric: 'temperature', field: 'temperature', domainName: globex }, 'only his own tenant’s alert');

  // And the other way round: another breach in B (another room, so another cooldown key) arrives at
  // ana after C's notification was out.
  t.strictSame(
    await postSigned(telemetry.url, { readings: [{ type: 'temperature', buildingId: buildingB, roomId: 'room-102', timestamp: now - 1000, temperature: 28 }] }, SECRET),
    { status: 200, json: { accepted: 1 } },
    'a second reading over B’s bound accepted',
  );
  await waitFor('the notification of B’s second breach at ana’s socket', () => ana.notifications.some((n) => n.roomId === 'room-102'));
  t.strictSame(
    ana.notifications.map((n) => [n.buildingId, n.roomId]),
    [
      [buildingB, 'room-101'],
      [buildingB, 'room-102'],
    ],
    'ana got nothing of C’s breach',
  );
  t.equal(ana.notifications[0], first);
  t.match(ana.notifications[1], { kind: 'alert', buildingId: buildingB, roomId: 'room-102', metric: 'temperature', field: 'temperature', domainName: acme });
  t.match((ana.notifications[1] as Record<string, unknown>).message, /\b28\b/);
  t.same(ana.telemetry, [], 'no telemetry without subscribe_building');
  t.same(gus.telemetry, []);

  // What went over the topic between telemetry and notification (CONTRACTS.md, Telemetry, Kafka).
  await waitFor('three alerts on the topic', () => alerts.length >= 3);
  const byRoom = [...alerts].sort((a, b) => String(a.value.roomId).localeCompare(String(b.value.roomId)));
  t.strictSame(
    byRoom.map((m) => m.key),
    [`${buildingC}:dock-1`, `${buildingB}:room-101`, `${buildingB}:room-102`],
    'keyed {buildingId}:{roomId}, one message per breach',
  );
  const alertIds = byRoom.map((m) => m.value.alertId);
  t.ok(alertIds.every((id) => typeof id === 'string' && id !== ''), 'each with an alertId');
  t.equal(new Set(alertIds).size, 3, 'distinct alertIds');
  t.strictSame(
    byRoom.map(({ value: { alertId: _alertId, ...rest } }) => rest),
    [
      { type: 'temperature', field: 'temperature', buildingId: buildingC, roomId: 'dock-1', value: 24.75, bound: 'maxTemperature', threshold: 20, timestamp: now - 2000 },
      { type: 'temperature', field: 'temperature', buildingId: buildingB, roomId: 'room-101', value: 31.5, bound: 'maxTemperature', threshold: 26, timestamp: now - 3000 },
      { type: 'temperature', field: 'temperature', buildingId: buildingB, roomId: 'room-102', value: 28, bound: 'maxTemperature', threshold: 26, timestamp: now - 1000 },
    ],
    'the value {alertId, type, field, buildingId, roomId, value, bound, threshold, timestamp}',
  );

  t.strictSame(
    directory.calls.map((c) => [c.buildingId, subOf(c.claims)]),
    [
      [buildingB, subOf(acmeManager)],
      [buildingC, subOf(globexManager)],
      [buildingB, 'system:notification-service'],
      [buildingC, 'system:notification-service'],
    ],
    'telemetry checked each edit with the manager’s claims; notification resolved each building once, with the system identity (then from its cache)',
  );
  t.strictSame(
    directory.calls.map((c) => c.claims).slice(0, 2),
    [acmeManager, globexManager],
    'telemetry forwarded the managers’ claims verbatim',
  );
});

t.test('an unroutable breach: the directory knows no domain of U; one unscoped notification reaches every connected socket, of every tenant and of none', async (t) => {
  const { directory, names, acme, globex, building } = await setUp(t);
  // The directory answers for U, with no domains: that is the unroutable case, not a failed lookup.
  const buildingU = building('orphan', []);

  const kafka = await kafkaSpace(t, { topics: [names.alertsTopic, names.registrationsTopic], groups: [names.registrationsGroup, names.alertsGroup] });
  const alerts = await kafka.collect(names.alertsTopic);
  deleteAlertKeysAtTeardown(t, [buildingU], () => alerts.map((m) => String(m.value.alertId)));
  const telemetry = await startTelemetry(t, { names, databaseUrl: await freshPgDatabase(t), directoryUrl: directory.url, secret: SECRET });
  const notification = await startNotification(t, { names, mongoUri: await freshMongoUri(t), directoryUrl: directory.url });
  const relay = await startRelay(t, { names, directoryUrl: directory.url });

  // Nobody has a membership in U's (empty) list of domains; a platform administrator may still edit it
  // (CanEditDomains: any membership of weight 100).
  const admin = claimsOf(uniqueName('root'), uniqueName('ops'), 'admin');
  await setMaxTemperature(t, telemetry.url, admin, buildingU, 26, 'U’s bound set by an administrator');

  // Browsers of two tenants, and one of an account with no membership at all (in no domain room).
  const ana = await openSocket(t, relay.url, claimsOf(uniqueName('ana'), acme, 'viewer'));
  const gus = await openSocket(t, relay.url, claimsOf(uniqueName('gus'), globex, 'viewer'));
  const nemoSub = uniqueName('nemo');
  const nemo = await openSocket(t, relay.url, encodeClaims({ sub: nemoSub, accountName: `${nemoSub}@nowhere.test`, memberships: [] }));
  const sockets = { ana, gus, nemo };
  const all = Object.values(sockets);

  // Two breaches in two rooms (two cooldown keys), the second posted once the first was everywhere.
  const now = Date.now();
  t.strictSame(
    await postSigned(telemetry.url, { readings: [{ type: 'temperature', buildingId: buildingU, roomId: 'room-1', timestamp: now - 2000, temperature: 31.5 }] }, SECRET),
    { status: 200, json: { accepted: 1 } },
    'a reading over U’s bound accepted',
  );
  await waitFor('the notification of U’s first breach at every socket', () => all.every((s) => s.notifications.some((n) => n.roomId === 'room-1')));
  t.strictSame(
    await postSigned(telemetry.url, { readings: [{ type: 'temperature', buildingId: buildingU, roomId: 'room-2', timestamp: now - 1000, temperature: 28 }] }, SECRET),
    { status: 200, json: { accepted: 1 } },
    'a second reading over U’s bound accepted',
  );
  await waitFor('the notification of U’s second breach at every socket', () => all.every((s) => s.notifications.some((n) => n.roomId === 'room-2')));

  // Once a socket has the second, it has everything published before it that was going to reach it.
  for (const [who, socket] of Object.entries(sockets)) {
    t.strictSame(
      socket.notifications.map((n) => [n.buildingId, n.roomId]),
      [
        [buildingU, 'room-1'],
        [buildingU, 'room-2'],
      ],
      `${who}’s socket got each unscoped notification exactly once, in order`,
    );
  }
  const [first, second] = ana.notifications as [Record<string, unknown>, Record<string, unknown>];
  t.strictSame(gus.notifications, [first, second], 'gus got the very same notifications (one publish each, not one per socket or domain)');
  t.strictSame(nemo.notifications, [first, second], 'and so did the socket in no domain room');
  t.strictSame(
    Object.keys(first).sort(),
    ['buildingId', 'createdAt', 'field', 'id', 'kind', 'message', 'metric', 'roomId', 'severity', 'title'],
    'the shared notification schema with no domainName: unscoped (CONTRACTS.md, Notification)',
  );
  t.match(first, { kind: 'alert', buildingId: buildingU, roomId: 'room-1', metric: 'temperature', field: 'temperature' }, 'an alert for U’s room and metric');
  t.match(second, { kind: 'alert', buildingId: buildingU, roomId: 'room-2', metric: 'temperature', field: 'temperature' });
  t.ok(['info', 'warning', 'danger'].includes(String(first.severity)), 'a severity of the contract');
  t.match(first.message, /\b31\.5\b/, 'the message carries the breaching value');
  t.match(second.message, /\b28\b/);
  t.not(first.id, second.id, 'one notification per breach, each with its id');
  t.same(ana.telemetry, [], 'no telemetry without subscribe_building');

  await waitFor('two alerts on the topic', () => alerts.length >= 2);
  t.strictSame(
    alerts.map((m) => m.key).sort(),
    [`${buildingU}:room-1`, `${buildingU}:room-2`],
    'telemetry sent one alert per breach',
  );
  // Counted once the record is settled, just after its publish: wait for the count to get there.
  const consumed = (outcome: string) => metricValue(notification.url, 'notification_alerts_consumed_total', { outcome });
  await waitFor('both alerts counted unroutable', async () => (await consumed('unroutable')) === 2);
  t.equal(await consumed('delivered'), 0, 'neither counted delivered');
  const errorLines = () => notification.logs.filter((l) => l.level === 50 && l.buildingId === buildingU);
  await waitFor('two error lines naming U', () => errorLines().length >= 2);
  t.equal(errorLines().length, 2, 'each unroutable alert logged at error (pino level 50), naming the building');
  t.strictSame(
    directory.calls.map((c) => [c.buildingId, subOf(c.claims)]),
    [
      [buildingU, subOf(admin)],
      [buildingU, 'system:notification-service'],
      [buildingU, 'system:notification-service'],
    ],
    'telemetry checked the edit with the administrator’s claims; notification looked U up for each breach with the system identity (an empty answer is never cached)',
  );
});

t.test('a manual alert: an administrator’s POST /trigger reaches the sockets of every domain of the building and no others; for a building with no domains, every socket', async (t) => {
  const { directory, names, acme, globex, building } = await setUp(t);
  const initech = uniqueName('initech');
  const ops = uniqueName('ops');
  const shared = building('mall', [acme, globex]);
  const orphan = building('orphan', []);

  // Notification consumes its topic from the start, even though no alert comes this way here.
  await kafkaSpace(t, { topics: [names.alertsTopic], groups: [names.alertsGroup] });
  const notification = await startNotification(t, { names, mongoUri: await freshMongoUri(t), directoryUrl: directory.url });
  const relay = await startRelay(t, { names, directoryUrl: directory.url });

  // Tenants of the building, a tenant outside it, and the administrator's own browser: the admin role
  // (weight 100) is held in a domain of its own, which the building is not in.
  const rootSub = uniqueName('root');
  const admin = claimsOf(rootSub, ops, 'admin');
  const sockets = {
    ana: await openSocket(t, relay.url, claimsOf(uniqueName('ana'), acme, 'viewer')),
    gus: await openSocket(t, relay.url, claimsOf(uniqueName('gus'), globex, 'viewer')),
    ivy: await openSocket(t, relay.url, claimsOf(uniqueName('ivy'), initech, 'viewer')),
    root: await openSocket(t, relay.url, admin),
  };
  const { ana, gus } = sockets;
  const all = Object.values(sockets);

  const drill = { buildingId: shared, type: 'warning', title: 'Fire drill', message: 'Leave by the east stairs at 10:00' };
  // The notification service rejects claims with no accountName, even an administrator's (CONTRACTS.md, Identity).
  const noAccountName = encodeClaims({ sub: rootSub, memberships: [{ domainName: ops, role: 'admin' }] });
  const refused = await callAs(`${notification.url}/trigger`, noAccountName, 'POST', drill);
  t.equal(refused.status, 401, 'claims without accountName: 401');
  t.match(refused.json, { type: 'Unauthorized' });

  const answer = await callAs(`${notification.url}/trigger`, admin, 'POST', drill);
  t.equal(answer.status, 200, 'the administrator’s trigger answered 200');
  const { domains, ...counts } = answer.json as { domains: string[]; inApp: number; push: number };
  t.strictSame([...domains].sort(), [acme, globex].sort(), 'fanned out to every domain of the building: the admin is unrestricted');
  t.strictSame(counts, { inApp: 2, push: 0 }, 'one in-app notification per domain; no device registered, so no push');

  // A building with no domains: from an administrator, one unscoped notification (CONTRACTS.md,
  // Notification). Published after the drill's, so it fences every socket.
  t.strictSame(
    await callAs(`${notification.url}/trigger`, admin, 'POST', { buildingId: orphan }),
    { status: 200, json: { domains: [], inApp: 1, push: 0 } },
    'a building with no domains: one unscoped notification',
  );
  await waitFor('the unscoped manual alert at every socket', () => all.every((s) => s.notifications.some((n) => n.buildingId === orphan)));

  const seen = (socket: (typeof all)[number]) => socket.notifications.map((n) => [n.buildingId, n.domainName ?? null]);
  t.strictSame(
    seen(ana),
    [
      [shared, acme],
      [orphan, null],
    ],
    'ana (acme) got the drill for acme, then the unscoped alert',
  );
  t.strictSame(
    seen(gus),
    [
      [shared, globex],
      [orphan, null],
    ],
    'gus (globex) got the drill for globex, then the unscoped alert',
  );
  t.strictSame(seen(sockets.ivy), [[orphan, null]], 'ivy, of a tenant outside the building, got nothing of the drill');
  t.strictSame(seen(sockets.root), [[orphan, null]], 'the administrator’s own domain is no audience of the drill: the building’s domains are');

  const [forAcme, unscoped] = ana.notifications as [Record<string, unknown>, Record<string, unknown>];
  const forGlobex = gus.notifications[0] as Record<string, unknown>;
  t.strictSame(
    Object.keys(forAcme).sort(),
    ['buildingId', 'createdAt', 'domainName', 'id', 'kind', 'message', 'severity', 'title'],
    'the shared notification schema: a manual alert has no room, metric or field',
  );
  t.match(forAcme, { kind: 'manual', severity: 'warning', title: 'Fire drill', message: 'Leave by the east stairs at 10:00', buildingId: shared, domainName: acme });
  t.match(forGlobex, { kind: 'manual', severity: 'warning', title: 'Fire drill', message: 'Leave by the east stairs at 10:00', buildingId: shared, domainName: globex });
  t.not(forAcme.id, forGlobex.id, 'one notification per domain, each with its id');
  t.ok(typeof forAcme.createdAt === 'string' && !Number.isNaN(Date.parse(forAcme.createdAt)), 'a timestamp');

  t.strictSame(
    Object.keys(unscoped).sort(),
    ['buildingId', 'createdAt', 'id', 'kind', 'message', 'severity', 'title'],
    'the unscoped alert carries no domainName',
  );
  t.match(unscoped, { kind: 'manual', severity: 'danger', buildingId: orphan }, 'severity defaults to danger');
  for (const socket of all) t.strictSame(socket.notifications.at(-1), unscoped, 'the same notification at every socket: one publish');

  t.strictSame(
    directory.calls.map((c) => [c.buildingId, c.claims]),
    [
      [shared, admin],
      [orphan, admin],
    ],
    'each trigger looked its building up with the caller’s claims, verbatim (the refused one made no lookup)',
  );
});

t.test('unconfigured, both ends of every link default to the contract’s names', async (t) => {
  // The tests above give every link a unique name, handed to both ends; the defaults must meet too.
  const telemetry = readEnv(TELEMETRY_ENV, { DATABASE_URL: 'postgres://db/telemetry', INGEST_SIGNING_SECRET: 'a-secret-of-16-chars-or-more' });
  const relay = readRelayConfig({ REDIS_URL: 'redis://127.0.0.1:6379' });
  t.equal(telemetry.FILTERED_CHANNEL_PREFIX, 'telemetry:filtered:', 'telemetry publishes on telemetry:filtered:{buildingId}');
  t.equal(telemetry.RAW_CHANNEL, 'telemetry:raw');
  t.equal(telemetryPattern(relay.channels), 'telemetry:filtered:*', 'the relay subscribes to the pattern telemetry:filtered:*');
  t.equal(telemetry.ALERTS_TOPIC, 'alerts', 'telemetry produces to alerts');
  // Notification's main.ts keeps its env defaults in an unexported spec (literals equal to these); its
  // adapters' defaults are what a test can read.
  t.equal(ALERTS_TOPIC, 'alerts', 'notification’s consumer defaults to alerts');
  t.equal(NOTIFICATIONS_CHANNEL, 'notifications', 'notification’s publisher defaults to notifications');
  t.equal(relay.channels.notifications, 'notifications', 'the relay subscribes to notifications');
});
