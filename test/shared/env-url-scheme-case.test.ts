import t from 'tap';
import { createServer, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { readEnv, url } from '../../shared/env.js';
import { stackEnv } from '../support/stack.js';

const redisUrl = (value: string): string => readEnv({ REDIS_URL: url(['redis', 'rediss']) }, { REDIS_URL: value }).REDIS_URL;

t.test('a URL comes back with its scheme lowercased and the rest exactly as given', async (t) => {
  t.equal(redisUrl('REDISS://:pw@host:6380/0'), 'rediss://:pw@host:6380/0');
  t.equal(redisUrl('Redis://default:Pa%2Fss@Cache.Example:6379/2'), 'redis://default:Pa%2Fss@Cache.Example:6379/2', 'user info, host and path keep their case');
  t.equal(redisUrl('rediss://:pw@host:6380'), 'rediss://:pw@host:6380', 'a lowercase one is unchanged');
  t.equal(readEnv({ U: url(['http', 'https']) }, { U: 'HTTPS://Twin.Example/Base' }).U, 'https://Twin.Example/Base');
  t.equal(readEnv({ U: url(['postgres']) }, { U: 'POSTGRES://lintel:pw@db:5432/Lintel' }).U, 'postgres://lintel:pw@db:5432/Lintel');
});

t.test('ioredis built from a validated upper-case REDISS:// URL speaks TLS, and its password never goes out in clear', async (t) => {
  // A loopback listener that records the first bytes a client sends: a TLS ClientHello starts with 0x16
  // (handshake record), a plain Redis client with its AUTH command.
  const received: Buffer[] = [];
  const peers = new Set<Socket>();
  const firstBytes = new Promise<Buffer>((resolve) => {
    const server = createServer((peer) => {
      peers.add(peer);
      peer.once('data', (chunk: Buffer) => {
        received.push(chunk);
        resolve(chunk);
        peer.destroy();
      });
    });
    server.listen(0, '127.0.0.1');
    t.teardown(() => {
      for (const peer of peers) peer.destroy();
      server.close();
    });
    server.once('listening', () => {
      const { port } = server.address() as { port: number };
      const value = redisUrl(`REDISS://:s3cret-pw@127.0.0.1:${port}/0`);
      const redis = new Redis(value, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
      redis.on('error', () => undefined);
      t.teardown(() => redis.disconnect());
      t.ok(redis.options.tls, 'TLS is on in the client options');
      redis.connect().catch(() => undefined);
    });
  });
  const first = await firstBytes;
  t.equal(first[0], 0x16, 'the first byte opens a TLS handshake');
  t.notOk(Buffer.concat(received).includes('s3cret-pw'), 'the password is not on the wire in clear');
});

t.test('a validated upper-case REDIS:// URL still reaches a plain Redis', async (t) => {
  const stack = stackEnv().REDIS_URL;
  t.match(stack, /^redis:\/\//, 'the stack Redis is plain');
  const value = redisUrl(`REDIS${stack.slice('redis'.length)}`);
  t.equal(value, stack);
  const redis = new Redis(value, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  t.teardown(() => redis.disconnect());
  await redis.connect();
  t.equal(await redis.ping(), 'PONG');
});
