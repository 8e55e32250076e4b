/**
 * The services connected, on the real stack. Telemetry, notification and the socket relay run as their
 * own processes (their composition roots, configured by environment as in a deployment) and meet only
 * where CONTRACTS.md says they do: Redis channels `telemetry:filtered:{buildingId}` and `notifications`,
 * and the Kafka topic `alerts`. A socket.io client with the mesh's claims header stands in for the
 * browser; the building directory is a fake. Every channel, topic, group and database is unique to
 * the test.
 *
 * Absence is proven by ordering, never by waiting for silence: Redis delivers one subscriber's messages
 * in publish order and the relay emits them in that order on each websocket, so once a later message
 * has arrived, anything published before it that was going to arrive has arrived too.
 */
import t from 'tap';
import { decodeClaims } from '../../shared/claims.js';
import { readEnv } from '../../shared/env.js';
import { TELEMETRY_ENV } from '../../cloud/telemetry/config.js';
import { readRelayConfig } from '../../cloud/relay/config.js';
import { telemetryPattern } from '../../cloud/relay/routing.js';
import { NOTIFICATIONS_CHANNEL } from '../../cloud/notification/redis.js';
import { ALERTS_TOPIC } from '../../cloud/notification/kafka.js';
import { startFakeDirectory } from '../support/fake-directory.js';
import { freshMongoUri, freshPgDatabase, uniqueName } from '../support/stack.js';
import {
  callAs,
  claimsOf,
  deleteAlertKeysAtTeardown,
  kafkaSpace,
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

/** The sub the directory saw a lookup made with (undefined for a header that does not decode). */
function subOf(claims: string | undefined): string | undefined {
  const decoded = decodeClaims(claims);
  return decoded.ok ? decoded.claims.sub : undefined;
}

t.test('live telemetry: a signed batch for building B reaches the socket subscribed to B as the browser view; C’s reading does not', async (t) => {
  // First: it fails the test at teardown on a call it was not set up for, which must skip no cleanup.
  const directory = await startFakeDirectory(t);
  const names = pipelineNames();
  const acme = uniqueName('acme');
  const globex = uniqueName('globex');
  const buildingB = uniqueName('tower');
  const buildingC = uniqueName('depot');
  directory.set(buildingB, [acme]);
  directory.set(buildingC, [globex]);

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
  // First: it fails the test at teardown on a call it was not set up for, which must skip no cleanup.
  const directory = await startFakeDirectory(t);
  const names = pipelineNames();
  const acme = uniqueName('acme');
  const globex = uniqueName('globex');
  const buildingB = uniqueName('tower');
  const buildingC = uniqueName('depot');
  directory.set(buildingB, [acme]);
  directory.set(buildingC, [globex]);

  const kafka = await kafkaSpace(t, { topics: [names.alertsTopic, names.registrationsTopic], groups: [names.registrationsGroup, names.alertsGroup] });
  const alerts = await kafka.collect(names.alertsTopic);
  deleteAlertKeysAtTeardown(t, [buildingB, buildingC], () => alerts.map((m) => String(m.value.alertId)));
  const telemetry = await startTelemetry(t, { names, databaseUrl: await freshPgDatabase(t), directoryUrl: directory.url, secret: SECRET });
  await startNotification(t, { names, mongoUri: await freshMongoUri(t), directoryUrl: directory.url });
  const relay = await startRelay(t, { names, directoryUrl: directory.url });

  // Each building's facility manager sets its temperature bound through telemetry's thresholds route.
  const acmeManager = claimsOf(uniqueName('fm-acme'), acme, 'facility_manager');
  const globexManager = claimsOf(uniqueName('fm-globex'), globex, 'facility_manager');
  t.strictSame(
    await callAs(`${telemetry.url}/thresholds/buildings/${buildingB}`, acmeManager, 'PUT', { temperature: { maxTemperature: 26 } }),
    { status: 200, json: { buildingId: buildingB, thresholds: { temperature: { maxTemperature: 26 } } } },
    'B’s bound set',
  );
  t.strictSame(
    await callAs(`${telemetry.url}/thresholds/buildings/${buildingC}`, globexManager, 'PUT', { temperature: { maxTemperature: 20 } }),
    { status: 200, json: { buildingId: buildingC, thresholds: { temperature: { maxTemperature: 20 } } } },
    'C’s bound set',
  );

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
