import { Redis } from 'ioredis';
import t, { type Test } from 'tap';
import { silentLogger } from '../../../shared/logger.js';
import { AccountDeletedConsumer } from '../../../cloud/tenancy/account-deleted-consumer.js';
import { createDomain, newAccount, startTenancy, type TenancyUnderTest } from './support/harness.js';
import { eventually, freePort, startPrivateRedis } from './support/redis.js';
import { capturedLogger } from '../../support/captured-logger.js';

/** Exercises every kind of route (reads, writes, invite codes, internal) and asserts they all work. */
async function routesWork(t: Test, app: TenancyUnderTest, label: string): Promise<void> {
  const owner = newAccount();
  const name = `d-${owner.slice(0, 8)}`;
  await createDomain(app, owner, { name, isPublic: true, joinPolicy: 'open-via-idp' });
  const asOwner = { sub: owner, memberships: [{ domainName: name, role: 'business_admin' }] };
  t.equal((await app.call('GET', '/domains', { as: asOwner })).status, 200, `${label}: public listing`);
  t.equal((await app.call('POST', `/domains/${name}/join`, { as: { sub: newAccount() } })).status, 201, `${label}: join`);
  const code = await app.call('POST', `/domains/${name}/invite-codes`, { as: asOwner, body: { role: 'member' } });
  t.equal(code.status, 201, `${label}: invite code`);
  t.equal((await app.call('POST', `/invite-codes/${(code.json as { code: string }).code}/redeem`, { as: { sub: newAccount() } })).status, 201, `${label}: redeem`);
  t.equal((await app.signed('GET', `/internal/memberships?accountId=${owner}`)).status, 200, `${label}: login path`);
  t.equal((await app.call('GET', '/health')).status, 200, `${label}: health`);
}

t.test('with REDIS_URL pointing at a port where nothing listens, every route works and stop is prompt', async (t) => {
  const app = await startTenancy(t);
  const consumer = new AccountDeletedConsumer({
    redisUrl: `redis://127.0.0.1:${await freePort()}`,
    stream: 'account.deleted.unreachable',
    group: 'tenancy-unreachable',
    removeAccount: (id) => app.store.removeAccount(id),
    logger: silentLogger(),
    retryDelayMs: 50,
  });
  await consumer.start();
  await routesWork(t, app, 'redis absent');
  await consumer.stop();
});

t.test('when Redis dies the routes keep working, and the consumer resumes when it is back', async (t) => {
  const redis = await startPrivateRedis(t);
  const app = await startTenancy(t);
  const owner = newAccount();
  await createDomain(app, owner, { name: 'acme' });
  const { logger, lines } = capturedLogger('tenancy-test');
  const consumer = new AccountDeletedConsumer({ redisUrl: redis.url, removeAccount: (id) => app.store.removeAccount(id), logger, retryDelayMs: 50 });
  t.teardown(() => consumer.stop());
  await consumer.start();
  const publisher = new Redis(redis.url, { maxRetriesPerRequest: 1, retryStrategy: (n) => Math.min(50 * n, 500) });
  publisher.on('error', () => undefined);
  t.teardown(() => publisher.disconnect());

  const members = async (account: string) => (await app.store.membershipsOf(account)).length;
  const first = newAccount();
  await app.store.addMember('acme', { accountId: first, role: 'member', joinedVia: 'invite' }, 'refuse');
  await publisher.xadd('account.deleted', '*', 'accountId', first);
  await eventually(async () => (await members(first)) === 0, 'consumer working against the private redis (default stream and group names)');

  await redis.kill();
  await routesWork(t, app, 'redis killed');

  await redis.restart();
  const second = newAccount();
  await app.store.addMember('acme', { accountId: second, role: 'member', joinedVia: 'invite' }, 'refuse');
  // The restarted server is empty: the consumer must notice its group is gone and create it again.
  await eventually(async () => {
    try {
      await publisher.xadd('account.deleted', '*', 'accountId', second);
      return true;
    } catch {
      return false;
    }
  }, 'publish after restart');
  await eventually(async () => (await members(second)) === 0, 'consumer resumed after redis came back');
  await routesWork(t, app, 'redis back');

  // The group the restarted server lacked is not an outage: it must not silence the next real one.
  const beforeSecondOutage = lines.length;
  await redis.kill();
  const outageLogged = () => lines.slice(beforeSecondOutage).some((line) => line.msg === 'account-deleted consumer: redis unavailable; retrying');
  await eventually(outageLogged, 'the second outage logged');
  t.ok(outageLogged(), 'a second outage is logged too');
});
