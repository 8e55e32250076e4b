/**
 * The telemetry service sends device actions through its own dispatcher, whose device host lookups are
 * bounded (shared/devices/dispatcher.ts). On undici's global dispatcher, each click on a device whose
 * name never resolves started a dns.lookup that kept one of libuv's 4 threads after the 5 s timeout
 * answered the caller; four clicks stalled every other lookup of the service (the directory, PostgreSQL,
 * Redis and Kafka reconnects), for all tenants.
 *
 * The whole service as main.ts composes it, on the real PostgreSQL, Redis and Kafka, with a fake
 * directory and a loopback fake device. The resolver (an outside service) is injected: its lookups of
 * `*.stuck.test` hold a real pool thread and never answer; `localhost` goes to the real dns.lookup.
 */
import { lookup } from 'node:dns/promises';
import { Redis } from 'ioredis';
import '../../../shared/kafkajs-idle-loop.js';
import pg from 'pg';
import t from 'tap';
import { parseRegistration } from '../../../cloud/telemetry/domain/registration.js';
import { createTelemetryMetrics } from '../../../cloud/telemetry/metrics.js';
import { TelemetryService } from '../../../cloud/telemetry/service.js';
import { PgBuildingStore } from '../../../cloud/telemetry/store/buildings.js';
import { encodeClaims } from '../../../shared/claims.js';
import { loadBindingCatalog } from '../../../shared/devices/bindings.js';
import { createBuildingDirectory } from '../../../shared/directory.js';
import { silentLogger } from '../../../shared/logger.js';
import { startFakeDevice } from '../../support/fake-device.js';
import { startFakeDirectory } from '../../support/fake-directory.js';
import { stuckResolver } from '../../support/stuck-resolver.js';
import { freshPgDatabase, quietAtTeardown } from './support/database.js';
import { SHARED_SECRET, call, stackRedisUrl } from './support/harness.js';
import { createTopics, directKafka, uniqueName } from './support/kafka.js';

const manager = { sub: 'u-fm', accountName: 'fm@acme.test', memberships: [{ domainName: 'acme', role: 'facility_manager' }] };

t.test('actions on a device whose name never resolves hold one lookup thread; the service still looks names up and reaches other devices', async (t) => {
  // First: they fail the test at teardown on a call they were not set up for, which must skip no cleanup.
  const directory = await startFakeDirectory(t);
  const device = await startFakeDevice(t);
  directory.set('b1', ['acme']);
  const resolver = stuckResolver(t);
  const alertsTopic = uniqueName('alerts');
  const registrationsTopic = uniqueName('registrations');
  await createTopics(t, [alertsTopic, registrationsTopic], 1);
  const pool = quietAtTeardown(new pg.Pool({ connectionString: await freshPgDatabase(t) }));
  const service = new TelemetryService(
    {
      port: 0,
      host: '127.0.0.1',
      privacyFloor: 5,
      sharedKeys: [SHARED_SECRET],
      alertsTopic,
      registrationsTopic,
      registrationsGroup: uniqueName('group'),
      brokerRetryMs: 250,
      deviceTimeoutMs: 1000,
    },
    {
      pool,
      redis: new Redis(stackRedisUrl(), { maxRetriesPerRequest: 1 }),
      kafka: directKafka(),
      directory: createBuildingDirectory({ baseUrl: directory.url, cacheTtlMs: 0 }),
      catalog: await loadBindingCatalog(),
      logger: silentLogger(),
      clock: Date.now,
      metrics: createTelemetryMetrics({ defaults: false }),
      deviceResolver: resolver.resolve,
    },
  );
  await service.start();
  t.teardown(() => service.stop());

  const thermostat = (sensorId: string, host: string) => ({ sensorId, roomId: 'r1', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint: `http://${host}:${device.port}` });
  const parsed = parseRegistration({ buildingId: 'b1', rooms: ['r1'], sensors: [thermostat('stat-stuck', 'stat.stuck.test'), thermostat('stat-local', 'localhost')] });
  if (!parsed.ok) throw new Error(parsed.errors.join('; '));
  await new PgBuildingStore(pool).applyRegistration(parsed.value);
  const executeAction = (sensorId: string) =>
    call(
      `http://127.0.0.1:${service.port}/executeAction`,
      'POST',
      JSON.stringify({ metric: 'temperature', buildingId: 'b1', roomId: 'r1', sensorId, action: 'setTarget', arguments: { target: 21.5 } }),
      { 'content-type': 'application/json', 'x-gateway-claims': encodeClaims(manager) },
    );

  const together = await Promise.all([1, 2, 3].map(() => executeAction('stat-stuck')));
  t.same(together.map((answer) => answer.status), [502, 502, 502], 'actions at once on the stuck device are 502');
  for (let i = 0; i < 3; i++) t.equal((await executeAction('stat-stuck')).status, 502, 'a later action on it is 502');
  t.same(resolver.stuck, ['stat.stuck.test'], "the service's resolver looked the stuck host up once: one thread held, not one per action");

  const local = await lookup('localhost');
  t.ok(local.address, 'a lookup elsewhere in the service still gets a thread and answers');

  device.on('POST', '/api/v1/thermostat/hold', 204, '');
  const reached = await executeAction('stat-local');
  t.equal(reached.status, 200, 'an action on a device whose name resolves is accepted');
  t.same(device.calls.map((c) => [c.method, c.path, c.body]), [['POST', '/api/v1/thermostat/hold', { holdTemp: 21.5 }]], 'and reached the device');
  t.same(resolver.unexpected, [], 'no other name was looked up');
});
