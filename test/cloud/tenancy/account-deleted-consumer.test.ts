import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import t from 'tap';
import { silentLogger } from '../../../shared/logger.js';
import { AccountDeletedConsumer, type AccountDeletedConsumerOptions } from '../../../cloud/tenancy/account-deleted-consumer.js';
import { PgTenancyStore } from '../../../cloud/tenancy/pg-store.js';
import { createDomain, migratedPool, newAccount, startTenancy, type TenancyUnderTest } from './support/harness.js';
import { eventually, stackRedisUrl, startPrivateRedis } from './support/redis.js';
import { uniqueName } from '../../support/stack.js';
import { capturedLogger } from '../../support/captured-logger.js';

const STALLING_CONSUMER = fileURLToPath(new URL('./fixtures/stalling-consumer.ts', import.meta.url));

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** A stream and group no other test uses, deleted at teardown, and a client to publish with. */
function streamFixture(t: Teardown) {
  const stream = uniqueName('account.deleted.test');
  const group = uniqueName('tenancy_test');
  const redis = new Redis(stackRedisUrl());
  t.teardown(async () => {
    await redis.del(stream, `${stream}.dead`);
    redis.disconnect();
  });
  return {
    stream,
    group,
    redis,
    publish: (accountId: string) => redis.xadd(stream, '*', 'accountId', accountId) as Promise<string>,
    pendingCount: async () => ((await redis.xpending(stream, group)) as [number])[0],
  };
}

function consumerFor(t: Teardown, options: AccountDeletedConsumerOptions): AccountDeletedConsumer {
  const consumer = new AccountDeletedConsumer(options);
  t.teardown(() => consumer.stop());
  return consumer;
}

async function membershipCount(pool: TenancyUnderTest['pool'], accountIds: string[]): Promise<number> {
  const result = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM memberships WHERE account_id = ANY($1::uuid[])', [accountIds]);
  return result.rows[0]?.n ?? -1;
}

async function accountsWithMemberships(app: TenancyUnderTest, count: number, domains = ['acme', 'globex']): Promise<string[]> {
  const owner = newAccount();
  for (const name of domains) {
    if (!(await app.store.findDomain(name))) await createDomain(app, owner, { name });
  }
  const accounts = Array.from({ length: count }, newAccount);
  for (const account of accounts) {
    for (const name of domains) await app.store.addMember(name, { accountId: account, role: 'member', joinedVia: 'invite' }, 'refuse');
  }
  return accounts;
}

t.test('an account-deleted entry removes every membership of that account and is acknowledged', async (t) => {
  const app = await startTenancy(t);
  const fixture = streamFixture(t);
  const [gone = '', kept = ''] = await accountsWithMemberships(app, 2);
  // Published before the group exists: the group starts at the beginning of the stream.
  await fixture.publish(gone);
  const consumer = consumerFor(t, { redisUrl: stackRedisUrl(), stream: fixture.stream, group: fixture.group, consumer: 'c1', removeAccount: (id) => app.store.removeAccount(id), logger: silentLogger() });
  await consumer.start();
  await eventually(async () => (await membershipCount(app.pool, [gone])) === 0, 'memberships removed');
  await eventually(async () => (await fixture.pendingCount()) === 0, 'entry acknowledged');
  t.equal(await membershipCount(app.pool, [kept]), 2, 'other accounts untouched');

  await fixture.publish(kept.toUpperCase());
  await eventually(async () => (await membershipCount(app.pool, [kept])) === 0, 'a later entry (uuid in upper case) is handled too');
  t.equal(await fixture.redis.xlen(`${fixture.stream}.dead`), 0, 'nothing dead-lettered');
});

t.test('a poison entry is dead-lettered after 5 deliveries and does not hold up the stream', async (t) => {
  const app = await startTenancy(t);
  const fixture = streamFixture(t);
  const { logger, lines } = capturedLogger('tenancy-test');
  const [good = ''] = await accountsWithMemberships(app, 1);
  const poisonId = await fixture.publish('not-a-uuid');
  await fixture.redis.xadd(fixture.stream, '*', 'userId', newAccount());
  await fixture.publish(good);
  const consumer = consumerFor(t, {
    redisUrl: stackRedisUrl(),
    stream: fixture.stream,
    group: fixture.group,
    consumer: 'c1',
    removeAccount: (id) => app.store.removeAccount(id),
    logger,
    reclaimIdleMs: 30,
    reclaimIntervalMs: 40,
  });
  await consumer.start();
  await eventually(async () => (await membershipCount(app.pool, [good])) === 0, 'the good entry behind the poison was handled');
  await eventually(async () => (await fixture.redis.xlen(`${fixture.stream}.dead`)) === 2, 'both poison entries dead-lettered');
  await eventually(async () => (await fixture.pendingCount()) === 0, 'and acknowledged');
  const dead = (await fixture.redis.xrange(`${fixture.stream}.dead`, '-', '+')) as [string, string[]][];
  const first = Object.fromEntries(((dead[0]?.[1] ?? []) as string[]).flatMap((v, i, all) => (i % 2 === 0 ? [[v, all[i + 1]]] : [])));
  t.match(first, { accountId: 'not-a-uuid', sourceStream: fixture.stream, sourceId: poisonId, deliveries: '5', failure: 'MalformedEntry' });
  const retries = lines.filter((l) => l.msg === 'account-deleted entry failed; left pending for redelivery' && l.entry === poisonId);
  t.equal(retries.length, 4, 'four failed deliveries were logged and left pending');
  t.equal(lines.filter((l) => l.msg === 'account-deleted entry dead-lettered' && l.entry === poisonId).length, 1, 'the fifth dead-lettered it');
  t.notOk(JSON.stringify(lines).includes('not-a-uuid'), 'entry contents are not logged');
});

t.test('an entry already delivered 5 times elsewhere is dead-lettered on claim, without another attempt', async (t) => {
  const fixture = streamFixture(t);
  const account = newAccount();
  await fixture.redis.xgroup('CREATE', fixture.stream, fixture.group, '0', 'MKSTREAM');
  const id = await fixture.publish(account);
  // A crash-looping consumer read it five times and never acknowledged it.
  await fixture.redis.xreadgroup('GROUP', fixture.group, 'crashy', 'COUNT', 1, 'STREAMS', fixture.stream, '>');
  for (let i = 0; i < 4; i++) await fixture.redis.xreadgroup('GROUP', fixture.group, 'crashy', 'COUNT', 1, 'STREAMS', fixture.stream, '0');
  const attempts: string[] = [];
  const consumer = consumerFor(t, {
    redisUrl: stackRedisUrl(),
    stream: fixture.stream,
    group: fixture.group,
    consumer: 'survivor',
    removeAccount: async (accountId) => void attempts.push(accountId),
    logger: silentLogger(),
    reclaimIdleMs: 20,
    reclaimIntervalMs: 30,
  });
  await consumer.start();
  await eventually(async () => (await fixture.redis.xlen(`${fixture.stream}.dead`)) === 1, 'dead-lettered');
  await eventually(async () => (await fixture.pendingCount()) === 0, 'acknowledged');
  t.same(attempts, [], 'not attempted a sixth time');
  const [[, fields] = ['', []]] = (await fixture.redis.xrange(`${fixture.stream}.dead`, '-', '+')) as [string, string[]][];
  const dead = Object.fromEntries(fields.flatMap((v, i, all) => (i % 2 === 0 ? [[v, all[i + 1]]] : [])));
  t.match(dead, { accountId: account, sourceId: id, deliveries: '6' });
});

async function runStallingConsumer(t: Teardown, env: Record<string, string>): Promise<() => Promise<void>> {
  const child = spawn(process.execPath, ['--import', 'tsx', STALLING_CONSUMER], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  t.teardown(async () => {
    child.kill('SIGKILL');
    await exited;
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('stalled')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`stalling consumer exited early (${code}): ${stderr.slice(0, 500)}`)));
  });
  return async () => {
    child.kill('SIGKILL');
    await exited;
  };
}

for (const [title, restartAs, idleMs] of [
  ['a consumer killed mid-batch has its entries reclaimed by another (XAUTOCLAIM)', 'survivor', 50],
  ['a consumer killed mid-batch drains its own pending list when it starts again', 'doomed', 60_000],
] as const) {
  t.test(title, async (t) => {
    const { pool, databaseUrl } = await migratedPool(t);
    const app = await startTenancy(t, { pool, databaseUrl });
    const fixture = streamFixture(t);
    const accounts = await accountsWithMemberships(app, 10, ['acme']);
    // Create the group first so the doomed consumer reads all ten in one batch.
    await fixture.redis.xgroup('CREATE', fixture.stream, fixture.group, '0', 'MKSTREAM');
    for (const account of accounts) await fixture.publish(account);
    const kill = await runStallingConsumer(t, { DATABASE_URL: databaseUrl, REDIS_URL: stackRedisUrl(), STREAM: fixture.stream, GROUP: fixture.group, CONSUMER: 'doomed' });
    await kill();
    const pending = (await fixture.redis.xpending(fixture.stream, fixture.group, '-', '+', 100, 'doomed')) as unknown[];
    t.equal(pending.length, 9, 'killed with nine entries read and never acknowledged');
    t.equal(await membershipCount(pool, accounts), 9, 'only the first was handled');

    const consumer = consumerFor(t, {
      redisUrl: stackRedisUrl(),
      stream: fixture.stream,
      group: fixture.group,
      consumer: restartAs,
      removeAccount: (id) => new PgTenancyStore(pool).removeAccount(id),
      logger: silentLogger(),
      reclaimIdleMs: idleMs,
      reclaimIntervalMs: 50,
    });
    await consumer.start();
    await eventually(async () => (await membershipCount(pool, accounts)) === 0, 'every account handled');
    await eventually(async () => (await fixture.pendingCount()) === 0, 'nothing left pending');
  });
}

/** The connections a private redis-server holds: `flags` and `cmd` of each, from CLIENT LIST. */
async function clientsOf(redis: Redis): Promise<{ flags: string; cmd: string }[]> {
  const list = (await redis.client('LIST')) as string;
  return list
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const fields = Object.fromEntries(line.split(' ').map((pair) => pair.split('=', 2) as [string, string]));
      return { flags: fields.flags ?? '', cmd: fields.cmd ?? '' };
    });
}

t.test('by default: account.deleted, group tenancy, 32 per read blocking 5 s, XAUTOCLAIM after 60 s, dead letters to account.deleted.dead', async (t) => {
  const redis = await startPrivateRedis(t);
  const observer = new Redis(redis.url);
  const monitor = await observer.monitor();
  t.teardown(() => {
    monitor.disconnect();
    observer.disconnect();
  });
  const commands: string[][] = [];
  monitor.on('monitor', (_time: string, args: unknown[]) => commands.push(args.map((arg, i) => (i === 0 ? String(arg).toLowerCase() : String(arg)))));

  // An entry this consumer already read 5 times before a restart: its own pending list is drained at
  // start, that read is the 6th delivery, so it goes straight to the dead letters.
  const setup = new Redis(redis.url);
  t.teardown(() => setup.disconnect());
  await setup.xgroup('CREATE', 'account.deleted', 'tenancy', '0', 'MKSTREAM');
  const poisonId = (await setup.xadd('account.deleted', '*', 'accountId', newAccount())) as string;
  await setup.xreadgroup('GROUP', 'tenancy', 'c1', 'COUNT', 1, 'STREAMS', 'account.deleted', '>');
  for (let i = 0; i < 4; i++) await setup.xreadgroup('GROUP', 'tenancy', 'c1', 'COUNT', 1, 'STREAMS', 'account.deleted', '0');

  const attempts: string[] = [];
  const consumer = consumerFor(t, { redisUrl: redis.url, consumer: 'c1', removeAccount: async (id) => void attempts.push(id), logger: silentLogger() });
  await consumer.start();
  const isBlockingRead = (args: string[]) => args[0] === 'xreadgroup' && args.includes('BLOCK');
  await eventually(() => commands.some(isBlockingRead), 'a blocking read');
  t.same(commands.find(isBlockingRead), ['xreadgroup', 'GROUP', 'tenancy', 'c1', 'COUNT', '32', 'BLOCK', '5000', 'STREAMS', 'account.deleted', '>']);
  t.same(await setup.xlen('account.deleted.dead'), 1, 'the sixth delivery was dead-lettered');
  const [[, fields] = ['', []]] = (await setup.xrange('account.deleted.dead', '-', '+')) as [string, string[]][];
  t.match(Object.fromEntries(fields.flatMap((v, i, all) => (i % 2 === 0 ? [[v, all[i + 1]]] : []))), { sourceStream: 'account.deleted', sourceId: poisonId, deliveries: '6' });
  t.same(attempts, [], 'without a sixth attempt');

  await consumer.reclaim();
  const isReclaim = (args: string[]) => args[0] === 'xautoclaim';
  await eventually(() => commands.some(isReclaim), 'a reclaim');
  t.same(commands.find(isReclaim), ['xautoclaim', 'account.deleted', 'tenancy', 'c1', '60000', '0-0', 'COUNT', '32']);
});

t.test('stop ends a blocked read and closes every connection; a stopped consumer takes nothing more', async (t) => {
  const redis = await startPrivateRedis(t);
  const observer = new Redis(redis.url);
  t.teardown(() => observer.disconnect());
  const taken: string[] = [];
  const consumer = new AccountDeletedConsumer({ redisUrl: redis.url, removeAccount: async (id) => void taken.push(id), logger: silentLogger() });
  await consumer.start();
  await eventually(async () => (await clientsOf(observer)).some((c) => c.cmd === 'xreadgroup' && c.flags.includes('b')), 'the consumer blocked in XREADGROUP');
  await consumer.stop();
  // Only the observer's own connection is left once the server has seen the others close.
  await eventually(async () => (await clientsOf(observer)).length === 1, 'every consumer connection closed');
  await observer.xadd('account.deleted', '*', 'accountId', newAccount());
  t.same(await observer.xpending('account.deleted', 'tenancy'), [0, null, null, null], 'the entry published after stop was read by nobody');
  t.same(taken, []);
});
