/**
 * SIGTERM while the service runs its startup migration. The migration holds a lock with a 10-minute
 * lease, and every replica starting meanwhile waits for it before serving; the stop must release it
 * before the database client closes, or the lock outlives the process and the next starts wait out the
 * lease. The service runs as its own process (`node --import tsx cloud/notification/main.ts`) on the
 * real FerretDB. The migration is held mid-way deterministically: one record it must update is locked
 * by someone else (a preferences lock document re-claimed every half second, so never seen unchanged
 * for the 10 s after which a replica takes a lock over), so once it has updated every other record it
 * waits there. How long it waits there is set far out (RECORD_LOCK_WAIT_MS, 10 minutes), so
 * it is still waiting whenever the test gets to send SIGTERM; each such test checks so just before. The
 * stop gives the migration its default 2 s (MIGRATION_STOP_MS) where the test needs the stop to give up
 * on it, and a minute where the test needs the migration to end by itself after the signal: outcomes
 * then follow from the order of events alone, however slowly a loaded machine runs them.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { ObjectId, type Db } from 'mongodb';
import t from 'tap';
import { silentLogger } from '../../../shared/logger.js';
import { MIGRATION_LOCK_ID, MigrationStoppedError, StartupMigration, markerId, migrateAlertableMetrics } from '../../../cloud/notification/migration.js';
import { COLLECTIONS, MongoNotificationStore } from '../../../cloud/notification/store.js';
import { capturedLogger } from '../../support/captured-logger.js';
import { STACK, kafka, freshMongo, uniqueName, waitFor, type Teardown } from './support/stack.js';

const MAIN = new URL('../../../cloud/notification/main.ts', import.meta.url).pathname;
const on = (notificationType: string) => ({ notificationType, isSubscribed: true });

/** How long the migration waits on a locked record: longer than any of these tests runs. */
const RECORD_LOCK_WAIT_MS = String(10 * 60_000);

/**
 * The service as a process, its JSON log lines collected. Not awaited until it listens (it listens only
 * once the migration is done); killed at teardown if still running. `env` adds to the service's
 * environment (the stop and record-lock limits).
 */
function startService(t: Teardown, mongoUri: string, env: Record<string, string> = {}) {
  const groupId = uniqueName('alerts');
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: '0',
      LOG_LEVEL: 'info',
      MONGO_URI: mongoUri,
      REDIS_URL: STACK.redisUrl,
      KAFKA_BROKERS: STACK.kafkaBrokers.join(','),
      // Never called: the service stops before it serves.
      DIGITAL_TWIN_URL: 'http://127.0.0.1:9',
      ALERTS_TOPIC: uniqueName('alerts'),
      ALERTS_GROUP: groupId,
      NOTIFICATIONS_CHANNEL: uniqueName('notifications'),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Array<Record<string, unknown>> = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    try {
      logs.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      logs.push({ msg: line });
    }
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  // 'close', not 'exit': only then has every log line been read.
  const exited = once(child, 'close') as Promise<[number | null]>;
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return { child, logs, exited, groupId, stderr: () => stderr };
}

/**
 * Whether the service still waits on the locked record, checked just before the test signals: it has
 * not exited, holds its migration lock, has not finished `metric`, and has logged no failure. A
 * migration that had given up on the record lock would have ended before the signal.
 */
async function stillWaiting(service: ReturnType<typeof startService>, db: Db, metric: string): Promise<boolean> {
  const markers = db.collection<{ _id: string; state?: string }>(COLLECTIONS.migrations);
  return (
    service.child.exitCode === null &&
    (await markers.countDocuments({ _id: MIGRATION_LOCK_ID, state: 'running' })) === 1 &&
    (await markers.countDocuments({ _id: markerId(metric), state: 'done' })) === 0 &&
    !service.logs.some((l) => typeof l.level === 'number' && l.level >= 50)
  );
}

/**
 * Holds a record's preferences lock as a replica re-claiming it every half second would: its
 * `claimedAt` changes each time, so no replica sees it unchanged for the lease and takes it over.
 * Answers what stops the re-claiming (and waits for one in flight), called before the lock is deleted
 * and at teardown.
 */
async function holdRecordLock(t: Teardown, db: Db, id: string): Promise<() => Promise<void>> {
  const recordLocks = db.collection<{ _id: string; owner: string; claimedAt: Date }>(COLLECTIONS.locks);
  await recordLocks.insertOne({ _id: id, owner: 'someone-else', claimedAt: new Date() });
  let claim = 0;
  let inFlight: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    claim++;
    inFlight = inFlight.then(() => recordLocks.updateOne({ _id: id }, { $set: { claimedAt: new Date(Date.now() + claim) } })).catch(() => undefined);
  }, 500);
  const stop = async () => {
    clearInterval(timer);
    await inFlight;
  };
  t.teardown(stop);
  return stop;
}

/** A record as an earlier version stored it, with temperature on: the migration must update it. */
async function legacy(db: Db, accountName: string, domainName: string) {
  await db.collection(COLLECTIONS.preferences).insertOne({ _id: new ObjectId(), accountName, domainName, preferences: [on('temperature')], createdAt: '2024-03-01T00:00:00.000Z' });
}

t.test('SIGTERM while the migration holds its lock and waits on a record: the lock is released, and the next start does not wait', async (t) => {
  const { db, uri } = await freshMongo(t);
  const accounts = Array.from({ length: 20 }, () => uniqueName('acct'));
  for (const account of accounts) await legacy(db, account, 'acme');
  const blocked = accounts[0] as string;
  // The record's preferences lock, held by someone else while the test runs.
  const recordLocks = db.collection<{ _id: string; owner: string; claimedAt: Date }>(COLLECTIONS.locks);
  const recordLockId = `preferences:${JSON.stringify([blocked, 'acme'])}`;
  const releaseRecordLock = await holdRecordLock(t, db, recordLockId);
  const markers = db.collection<{ _id: string; owner?: string; state?: string }>(COLLECTIONS.migrations);

  // The stop's own 2 s for the migration: the record stays locked, so only the stop can end it.
  const service = startService(t, uri, { RECORD_LOCK_WAIT_MS });
  const lock = await waitFor('the service to take the migration lock', async () => (await markers.findOne({ _id: MIGRATION_LOCK_ID })) ?? undefined, 30_000);
  t.match(lock, { state: 'running' }, 'the migration runs, holding its lock');
  const records = db.collection(COLLECTIONS.preferences);
  await waitFor('the migration to update every record but the locked one', async () => (await records.countDocuments({ configuredTypes: 'peopleCount' })) === accounts.length - 1, 30_000);
  t.ok(await stillWaiting(service, db, 'peopleCount'), 'just before SIGTERM the migration still waits on the locked record');
  service.child.kill('SIGTERM');
  const [code] = await service.exited;
  if (code !== 0) t.comment(service.stderr(), JSON.stringify(service.logs.slice(-8)));
  t.equal(code, 0, 'SIGTERM stops it cleanly');
  t.notOk(service.logs.some((l) => l.msg === 'startup migration finished'), 'it was stopped mid-way');
  t.ok(service.logs.some((l) => /^the startup migration did not stop in time; its lock is released/.test(String(l.msg))), 'the stop logged that it released the lock');
  t.equal(await markers.countDocuments({ _id: MIGRATION_LOCK_ID }), 0, 'no migration lock is left behind');
  t.equal(await markers.countDocuments({ _id: markerId('peopleCount'), state: 'done' }), 0, 'the unfinished metric is not marked done');

  // The next replica to start finds no lock: it runs the migration at once rather than waiting.
  await releaseRecordLock();
  await recordLocks.deleteOne({ _id: recordLockId });
  const store = new MongoNotificationStore(db, { recipientsCacheMs: 0 });
  await store.start();
  const report = await migrateAlertableMetrics(store, silentLogger(), { waitMs: 0 });
  t.same(report.metrics, { peopleCount: 1, airQuality: 20 }, 'the next start finishes the migration without waiting: the locked record, then the next metric');
  t.equal(await records.countDocuments({ $and: [{ configuredTypes: 'peopleCount' }, { configuredTypes: 'airQuality' }] }), accounts.length, 'every record has both metrics on');
});

t.test('SIGTERM while waiting for another replica that holds the lock: it stops without touching that lock', async (t) => {
  const { db, uri } = await freshMongo(t);
  await legacy(db, uniqueName('acct'), 'acme');
  const markers = db.collection<{ _id: string; owner?: string; state?: string; claimedAt?: Date }>(COLLECTIONS.migrations);
  await markers.insertOne({ _id: MIGRATION_LOCK_ID, state: 'running', owner: 'other-replica', claimedAt: new Date() });

  const service = startService(t, uri);
  await waitFor('the service to wait for the other replica', () => service.logs.some((l) => l.msg === 'migration: another replica holds the lock; waiting for it'), 30_000);
  service.child.kill('SIGTERM');
  const [code] = await service.exited;
  if (code !== 0) t.comment(service.stderr(), JSON.stringify(service.logs.slice(-8)));
  t.equal(code, 0, 'SIGTERM stops it cleanly');
  t.ok(service.logs.some((l) => l.msg === 'start cut short by the stop'), 'the start was cut short');
  t.notOk(service.logs.some((l) => /startup migration did not stop in time/.test(String(l.msg))), 'the migration stopped at once');
  t.match(await markers.findOne({ _id: MIGRATION_LOCK_ID }), { owner: 'other-replica' }, "the other replica's lock is left to it");
});

t.test('stop while waiting between two looks at another replica\'s lock: the pause is cut short, and the migration stops by itself within the stop limit', async (t) => {
  const { db } = await freshMongo(t);
  await legacy(db, uniqueName('acct'), 'acme');
  const markers = db.collection<{ _id: string; owner?: string; state?: string; claimedAt?: Date }>(COLLECTIONS.migrations);
  await markers.insertOne({ _id: MIGRATION_LOCK_ID, state: 'running', owner: 'other-replica', claimedAt: new Date() });
  const store = new MongoNotificationStore(db, { recipientsCacheMs: 0 });
  await store.start();
  const { logger, lines } = capturedLogger('notification');
  // One look an hour: unless the stop cuts the pause short, the migration would next look (and see
  // the stop) long after the stop limit.
  const migration = new StartupMigration(store, logger, { pollMs: 60 * 60_000 });
  const run = migration.run();
  run.catch(() => undefined);
  await waitFor('the migration to wait for the other replica', () => lines.some((l) => l.msg === 'migration: another replica holds the lock; waiting for it'));

  // A minute, not the service's default 2 s (MIGRATION_STOP_MS): far longer than the migration needs
  // once its pause is cut short, far shorter than the hour it would otherwise wait.
  const stoppedByItself = await migration.stop(60_000);
  t.equal(stoppedByItself, true, 'the migration ended by itself within the stop limit');
  t.notOk(lines.some((l) => /startup migration did not stop in time/.test(String(l.msg))), 'the stop did not have to release a lock for it');
  if (stoppedByItself) await t.rejects(run, MigrationStoppedError, 'its run ends as stopped');
  t.match(await markers.findOne({ _id: MIGRATION_LOCK_ID }), { owner: 'other-replica' }, "the other replica's lock is left to it");
});

t.test('SIGTERM while the last metric waits on a record that is then freed: the migration ends normally, yet the start goes no further', async (t) => {
  const { db, uri } = await freshMongo(t);
  const markers = db.collection<{ _id: string; owner?: string; state?: string; claimedAt?: Date }>(COLLECTIONS.migrations);
  // Only airQuality is left: it is the migration's last step.
  await markers.insertOne({ _id: markerId('peopleCount'), state: 'done', owner: 'earlier-start', claimedAt: new Date() });
  const accounts = Array.from({ length: 10 }, () => uniqueName('acct'));
  for (const account of accounts) await legacy(db, account, 'acme');
  const blocked = accounts[0] as string;
  const recordLocks = db.collection<{ _id: string; owner: string; claimedAt: Date }>(COLLECTIONS.locks);
  const recordLockId = `preferences:${JSON.stringify([blocked, 'acme'])}`;
  const releaseRecordLock = await holdRecordLock(t, db, recordLockId);

  // A minute for the migration to end by itself once the record is freed after the signal.
  const service = startService(t, uri, { RECORD_LOCK_WAIT_MS, MIGRATION_STOP_MS: '60000' });
  const records = db.collection(COLLECTIONS.preferences);
  await waitFor('the migration to update every record but the locked one', async () => (await records.countDocuments({ configuredTypes: 'airQuality' })) === accounts.length - 1, 30_000);
  t.ok(await stillWaiting(service, db, 'airQuality'), 'just before SIGTERM the migration still waits on the locked record');
  service.child.kill('SIGTERM');
  await waitFor('the service to begin its stop', () => service.logs.some((l) => l.msg === 'stopping'), 10_000);
  // Freed after the signal: the step the migration was in finishes well within the minute the stop gives it.
  await releaseRecordLock();
  await recordLocks.deleteOne({ _id: recordLockId });
  const [code] = await service.exited;
  if (code !== 0) t.comment(service.stderr(), JSON.stringify(service.logs.slice(-8)));

  t.equal(code, 0, 'SIGTERM stops it cleanly');
  t.equal(await markers.countDocuments({ _id: markerId('airQuality'), state: 'done' }), 1, 'the last step did finish');
  t.notOk(service.logs.some((l) => /startup migration did not stop in time/.test(String(l.msg))), 'the migration ended by itself, within the stop limit');
  t.notOk(service.logs.some((l) => l.msg === 'startup migration finished'), 'the start does not take the migration as finished');
  t.match(
    service.logs.filter((l) => l.msg === 'start cut short by the stop'),
    [{ error: 'MigrationStoppedError (ERR_MIGRATION_STOPPED)' }],
    'the start was cut short by the stopped migration',
  );
  t.notOk(service.logs.some((l) => l.msg === 'notification service listening'), 'it never listened');
  const admin = kafka().admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());
  const [group] = (await admin.describeGroups([service.groupId])).groups;
  t.same(group?.members ?? [], [], 'no member of its consumer group was left behind');
  t.equal(await markers.countDocuments({ _id: MIGRATION_LOCK_ID }), 0, 'no migration lock is left behind');
});
