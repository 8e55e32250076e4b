/**
 * A Redis that stays connected but stops answering (a network that drops packets, no reset): the
 * account-deleted consumer's blocking read used to wait for it until the OS gave the connection up,
 * about two hours, reading nothing meanwhile. Now the read fails within its block and timeout, the
 * consumer reports Redis unavailable and retries, and once Redis answers again, on a new connection, it
 * handles what was published meanwhile. Real Redis behind a proxy that goes silent.
 */
import { Redis } from 'ioredis';
import t from 'tap';
import { AccountDeletedConsumer } from '../../../cloud/tenancy/account-deleted-consumer.js';
import { capturedLogger } from '../../support/captured-logger.js';
import { uniqueName } from '../../support/stack.js';
import { startRedisProxy } from '../notification/support/redis-proxy.js';
import { createDomain, newAccount, startTenancy } from './support/harness.js';
import { eventually, stackRedisUrl } from './support/redis.js';

t.test('Redis goes silent: the consumer reports it, and handles what was published meanwhile once Redis answers again', async (t) => {
  const app = await startTenancy(t);
  const proxy = await startRedisProxy(t);
  const stream = uniqueName('account.deleted.silent');
  const group = uniqueName('tenancy_silent');
  const redis = new Redis(stackRedisUrl());
  t.teardown(async () => {
    await redis.del(stream, `${stream}.dead`);
    redis.disconnect();
  });
  const pendingCount = async () => ((await redis.xpending(stream, group)) as [number])[0];
  const owner = newAccount();
  const domain = `d-${owner.slice(0, 8)}`;
  await createDomain(app, owner, { name: domain });
  const [before = '', during = ''] = [newAccount(), newAccount()];
  for (const accountId of [before, during]) await app.store.addMember(domain, { accountId, role: 'member', joinedVia: 'invite' }, 'refuse');
  const members = async (accountId: string) => (await app.store.membershipsOf(accountId)).length;

  const { logger, lines } = capturedLogger('tenancy-test');
  // Short block and timeouts keep the test quick. An entry whose acknowledgement was sent into the
  // silence stays pending: the reclaim takes it over.
  const consumer = new AccountDeletedConsumer({
    redisUrl: proxy.url,
    stream,
    group,
    consumer: 'c1',
    removeAccount: (id) => app.store.removeAccount(id),
    logger,
    blockMs: 200,
    commandTimeoutMs: 500,
    retryDelayMs: 50,
    reclaimIdleMs: 500,
    reclaimIntervalMs: 250,
  });
  t.teardown(() => consumer.stop());
  await consumer.start();
  await redis.xadd(stream, '*', 'accountId', before);
  await eventually(async () => (await members(before)) === 0 && (await pendingCount()) === 0, 'the consumer to work through the proxy');

  proxy.silence();
  await eventually(() => lines.some((l) => l.msg === 'account-deleted consumer: redis unavailable; retrying'), 'the consumer to report Redis unavailable');
  await redis.xadd(stream, '*', 'accountId', during);
  proxy.restore();
  await eventually(async () => (await members(during)) === 0, 'the entry published while Redis was silent to be handled');
  await eventually(async () => (await pendingCount()) === 0, 'and acknowledged');
  t.ok(lines.some((l) => l.msg === 'account-deleted consumer: redis available again'), 'Redis is reported back');
  t.equal(await redis.xlen(`${stream}.dead`), 0, 'nothing dead-lettered');
});
