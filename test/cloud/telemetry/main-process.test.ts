import pg from 'pg';
import t from 'tap';
import { ConfigError, readEnv } from '../../../shared/env.js';
import { sign } from '../../../shared/hmac.js';
import { TELEMETRY_ENV } from '../../../cloud/telemetry/config.js';
import { freshPgDatabase } from './support/database.js';
import { call, peopleReading, stackRedisUrl, until } from './support/harness.js';
import { deleteTopicsAtTeardown, stackBrokers, uniqueName } from './support/kafka.js';
import { listeningPort, runScript as run } from './support/process.js';
import { startSilentBroker } from './support/silent-broker.js';

/**
 * `npm run telemetry` on `databaseUrl` with the stack's Redis and Kafka and `extra` on top; killed at
 * teardown if still running.
 */
function startService(t: { teardown(fn: () => unknown): void }, databaseUrl: string, extra: Record<string, string> = {}) {
  const service = run('cloud/telemetry/main.ts', [], {
    PORT: '0',
    DATABASE_URL: databaseUrl,
    REDIS_URL: stackRedisUrl(),
    KAFKA_BROKERS: stackBrokers().join(','),
    INGEST_SIGNING_SECRET: 'main-process-test-secret',
    ...extra,
  });
  t.teardown(() => {
    if (service.child.exitCode === null) service.child.kill('SIGKILL');
  });
  return service;
}

t.test('configuration: every problem is reported at once, with its variable', async (t) => {
  const err = t.throws(() =>
    readEnv(TELEMETRY_ENV, { PORT: 'eighty', REDIS_URL: 'http://redis', KAFKA_BROKERS: 'kafka', INGEST_SIGNING_SECRET: 'short', PRIVACY_FLOOR: '0' }),
  ) as ConfigError;
  t.type(err, ConfigError);
  t.same(err.problems, [
    'PORT: expected an integer, got "eighty"',
    'DATABASE_URL: required but not set',
    'REDIS_URL: not a redis:// or rediss:// URL',
    'KAFKA_BROKERS: expected host:port[,host:port…], got "kafka"',
    'INGEST_SIGNING_SECRET: every secret must be at least 16 characters; 1 of 1 are shorter',
    'PRIVACY_FLOOR: expected at least 1, got 0',
  ]);
  const env = readEnv(TELEMETRY_ENV, { DATABASE_URL: 'postgres://db/telemetry', INGEST_SIGNING_SECRET: 'current-secret-123456, previous-secret-12345' });
  t.match(env, { PORT: 3000, PRIVACY_FLOOR: 5, INGEST_SIGNING_SECRET: ['current-secret-123456', 'previous-secret-12345'], ALERTS_TOPIC: 'alerts', RAW_CHANNEL: 'telemetry:raw' });
});

t.test('npm run telemetry: refuses a bad environment with exit 2 and the list of problems', async (t) => {
  const proc = run('cloud/telemetry/main.ts', [], { PORT: 'x', INGEST_SIGNING_SECRET: '' });
  t.equal(await proc.exited, 2);
  t.match(proc.err(), /PORT: expected an integer/);
  t.match(proc.err(), /DATABASE_URL: required but not set/);
  t.match(proc.err(), /INGEST_SIGNING_SECRET: required/);
});

t.test('npm run telemetry: starts, migrates, ingests with a per-gateway key from keys-cli, and stops on SIGTERM', async (t) => {
  const databaseUrl = await freshPgDatabase(t);
  const added = run('cloud/telemetry/keys-cli.ts', ['add', 'gw-test-01', '--building', 'b1', 'test gateway'], { DATABASE_URL: databaseUrl });
  t.equal(await added.exited, 0, 'keys-cli add');
  const secret = /secret: ([0-9a-f]{64})/.exec(added.out())?.[1];
  t.ok(secret, 'the secret is printed once');
  t.match(added.out(), /^buildings: b1$/m);
  const again = run('cloud/telemetry/keys-cli.ts', ['add', 'gw-test-01', '--building', 'b1'], { DATABASE_URL: databaseUrl });
  t.equal(await again.exited, 1, 'an active key id cannot be added twice');
  t.match(again.err(), /already exists and is active/);
  const unnamed = run('cloud/telemetry/keys-cli.ts', ['add', 'gw-test-02', 'test gateway'], { DATABASE_URL: databaseUrl });
  t.equal(await unnamed.exited, 64, 'a new key without buildings is a usage error');
  t.match(unnamed.err(), /--building: a new key must name the buildings the key may write/);
  t.match(unnamed.err(), /^usage: keys-cli\.ts add <keyId> --building/m);
  // A key as every key was before keys named buildings: the service must warn about it at start.
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  await admin.query("INSERT INTO ingest_keys (key_id, secret, building_ids) VALUES ('gw-legacy', 'legacy-secret-0123456789', NULL)");
  t.same((await admin.query("SELECT key_id FROM ingest_keys WHERE key_id = 'gw-test-02'")).rows, [], 'nothing stored by the refused add');
  await admin.end();

  const suffix = uniqueName('main');
  deleteTopicsAtTeardown(t, suffix);
  const service = startService(t, databaseUrl, {
    ALERTS_TOPIC: `${suffix}-alerts`,
    REGISTRATIONS_TOPIC: `${suffix}-registrations`,
    REGISTRATIONS_GROUP: suffix,
    RAW_CHANNEL: `${suffix}:raw`,
    FILTERED_CHANNEL_PREFIX: `${suffix}:filtered:`,
  });
  const port = await listeningPort(service);
  t.ok(port, 'listening');
  t.match(service.out(), /"keyIds":\["gw-legacy"\][^\n]*may write any building; confine each with keys-cli\.ts bind/, 'the start warns about keys that may write any building');
  const url = `http://127.0.0.1:${port}`;
  t.same((await call(`${url}/health`, 'GET')).json, { status: 'ok' });
  const body = JSON.stringify({ readings: [peopleReading('b1', 'r1', Date.now(), 6)] });
  const viaKey = await call(`${url}/ingest`, 'POST', body, { 'content-type': 'application/json', 'x-key-id': 'gw-test-01', 'x-signature': sign(body, secret!) });
  t.equal(viaKey.status, 200, 'a key added with keys-cli verifies');
  const elsewhere = JSON.stringify({ readings: [peopleReading('b2', 'r1', Date.now(), 6)] });
  const outside = await call(`${url}/ingest`, 'POST', elsewhere, { 'content-type': 'application/json', 'x-key-id': 'gw-test-01', 'x-signature': sign(elsewhere, secret!) });
  t.equal(outside.status, 403, 'it writes only its buildings');
  const viaShared = await call(`${url}/telemetry/ingest`, 'POST', body, { 'content-type': 'application/json', 'x-signature': sign(body, 'main-process-test-secret') });
  t.equal(viaShared.status, 200, 'the shared key verifies too');

  const listed = run('cloud/telemetry/keys-cli.ts', ['list'], { DATABASE_URL: databaseUrl });
  t.equal(await listed.exited, 0);
  t.match(listed.out(), /^gw-test-01\tactive\t[^\t]+\ttest gateway\tb1$/m);
  t.match(listed.out(), /^gw-legacy\tactive\t[^\t]+\t\tany building \(unbound\)$/m);
  t.match(listed.err(), /warning: 1 active key\(s\) may write any building[^\n]*: gw-legacy/);
  t.notMatch(listed.out(), new RegExp(secret!), 'list never shows secrets');
  const revoked = run('cloud/telemetry/keys-cli.ts', ['revoke', 'gw-test-01'], { DATABASE_URL: databaseUrl });
  t.equal(await revoked.exited, 0);

  service.child.kill('SIGTERM');
  t.equal(await service.exited, 0, 'SIGTERM stops it cleanly');
  t.match(service.out(), /"msg":"stopped"/);
  t.notMatch(service.out() + service.err(), /main-process-test-secret|[0-9a-f]{64}/, 'no secret or signature in the logs');
});

t.test('npm run telemetry during a Kafka outage: SIGTERM stops it cleanly while its Kafka connects are still retrying', async (t) => {
  const databaseUrl = await freshPgDatabase(t);
  // Accepts and never answers: each Kafka connect waits out its request timeout (30 s) and retries.
  const kafka = await startSilentBroker(t);
  const suffix = uniqueName('outage');
  const service = startService(t, databaseUrl, { KAFKA_BROKERS: kafka.broker, RAW_CHANNEL: `${suffix}:raw`, FILTERED_CHANNEL_PREFIX: `${suffix}:filtered:` });
  const port = await listeningPort(service);
  t.ok(port, 'listening without Kafka');
  // The registrations consumer and the alert relay each connect on their own connection.
  await until(() => kafka.accepted() >= 2, 30_000, 'both Kafka connects to be under way');
  const body = JSON.stringify({ readings: [peopleReading('b1', 'r1', Date.now(), 6)] });
  const answer = await call(`http://127.0.0.1:${port}/ingest`, 'POST', body, { 'content-type': 'application/json', 'x-signature': sign(body, 'main-process-test-secret') });
  t.equal(answer.status, 200, 'ingest does not wait on Kafka');

  service.child.kill('SIGTERM');
  t.equal(await service.exited, 0, 'the stop finished: HTTP, ingest, Redis, the Kafka parts and the pool, within the deadline');
  t.match(service.out(), /"msg":"stopped"/);
  t.notMatch(service.out(), /stop took too long/);
});

t.test('npm run telemetry with PostgreSQL unreachable: one line naming it and where it was looked for, without the password, exit 1', async (t) => {
  // Port 9 (discard): nothing listens there, and no test binds it, unlike a port freed here for the purpose.
  const closed = 9;
  const proc = run('cloud/telemetry/main.ts', [], {
    PORT: '0',
    DATABASE_URL: `postgres://lintel:hunter2@127.0.0.1:${closed}/telemetry_db`,
    REDIS_URL: stackRedisUrl(),
    KAFKA_BROKERS: stackBrokers().join(','),
    INGEST_SIGNING_SECRET: 'shared-secret-0123456789',
  });
  t.equal(await proc.exited, 1);
  t.equal(proc.err(), `telemetry failed to start: DependencyUnreachable: cannot reach PostgreSQL at 127.0.0.1:${closed}/telemetry_db: Error (ECONNREFUSED)\n`);
  t.notMatch(proc.out(), /hunter2/, 'the password is not logged');
});

t.test('npm run telemetry: SIGTERM while its migration waits for another replica\'s stops it at once, exit 0', async (t) => {
  const databaseUrl = await freshPgDatabase(t);
  // Another replica migrating: its lock held for the whole test.
  const other = new pg.Client({ connectionString: databaseUrl });
  await other.connect();
  t.teardown(() => other.end());
  await other.query("SELECT pg_advisory_lock(hashtext('lintel-migrations:telemetry'))");
  const service = startService(t, databaseUrl);
  const waiting = async () => (await other.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rows[0]?.n ?? 0;
  await until(async () => (await waiting()) > 0, 30_000, 'its migration to wait for the lock');

  service.child.kill('SIGTERM');
  t.equal(await service.exited, 0, `a clean stop (stdout tail: ${service.out().slice(-500)})`);
  t.match(service.out(), /"msg":"stopped"/);
  t.notMatch(service.out(), /stop took too long/);
});
