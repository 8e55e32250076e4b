/**
 * The publisher's own Redis connection (broker/resp-pipeline.ts) against the stack's Redis: messages
 * arrive byte for byte on both channels in batch order, an error reply fails only its request, a
 * lost connection is opened again, and while the followed client is not ready a request fails at once.
 */
import { Redis } from 'ioredis';
import t from 'tap';
import { createRedisPublisher, publishedBatch } from '../../../cloud/telemetry/broker/redis-publisher.js';
import { RespPipeline, respCommand } from '../../../cloud/telemetry/broker/resp-pipeline.js';
import { stackRedisUrl, until } from './support/harness.js';

t.test('each message on the raw and its filtered channel, in order, byte for byte', async (t) => {
  const redis = new Redis(stackRedisUrl(), { maxRetriesPerRequest: 1 });
  const sub = new Redis(stackRedisUrl());
  t.teardown(() => Promise.all([redis.quit(), sub.quit()]));
  const prefix = `pipeline-test-${process.pid}-${Date.now()}:`;
  const got: Array<[string, string]> = [];
  sub.on('pmessageBuffer', (_pattern: Buffer, channel: Buffer, message: Buffer) => got.push([channel.toString('utf8'), message.toString('utf8')]));
  await sub.psubscribe(`${prefix}*`);
  await redis.ping();
  const publisher = createRedisPublisher(redis, { raw: `${prefix}raw`, filteredPrefix: `${prefix}f:` });
  t.teardown(() => publisher.close());
  const readings = [
    { buildingId: 'b1', message: '{"type":"peopleCount","buildingId":"b1","roomId":"r","timestamp":1,"peopleCount":3}' },
    { buildingId: 'bâtiment-é', message: '{"type":"peopleCount","buildingId":"bâtiment-é","roomId":"salle 😀","timestamp":2,"peopleCount":4}' },
    { buildingId: 'b1', message: '{"type":"peopleCount","buildingId":"b1","roomId":"r","timestamp":3,"peopleCount":5}' },
  ];
  await publisher.publish(publishedBatch(readings));
  await publisher.publish(publishedBatch([]));
  await until(() => got.filter(([c]) => c === `${prefix}raw`).length === 3 && got.length >= 6, 5000, 'messages');
  const raw = got.filter(([c]) => c === `${prefix}raw`);
  t.same(
    raw.map(([, m]) => m),
    readings.map((r) => r.message),
    'raw channel, in order',
  );
  t.same(
    got.filter(([c]) => c !== `${prefix}raw`),
    readings.map((r) => [`${prefix}f:${r.buildingId}`, r.message]),
    'filtered channels, in order',
  );
});

t.test('an error reply fails its request only; a lost connection is opened again; not ready fails at once', async (t) => {
  const redis = new Redis(stackRedisUrl(), { maxRetriesPerRequest: 1 });
  t.teardown(() => redis.quit());
  await redis.ping();
  const pipeline = new RespPipeline(redis);
  t.teardown(() => pipeline.close());
  await t.rejects(pipeline.send(Buffer.concat([respCommand('PUBLISH', 'only-a-channel'), respCommand('PUBLISH', 'c', 'm')]), 2), /Redis answered -ERR/);
  await t.resolves(pipeline.send(respCommand('PUBLISH', 'c', 'm'), 1), 'in step after an error');

  // Kill the pipeline's own connection (named through it), then publish again.
  const name = `pipeline-test-${process.pid}-${Date.now()}`;
  await pipeline.send(respCommand('CLIENT', 'SETNAME', name), 1);
  const own = String(await redis.client('LIST'))
    .split('\n')
    .find((line) => line.includes(` name=${name} `));
  const id = own === undefined ? undefined : /id=(\d+)/.exec(own)?.[1];
  t.ok(id, 'the pipeline connection is listed');
  if (id !== undefined) await redis.client('KILL', 'ID', id);
  await until(async () => (await pipeline.send(respCommand('PUBLISH', 'c', 'm'), 1).then(() => true, () => false)), 5000, 'a new connection');

  const dead = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
  t.teardown(() => dead.disconnect());
  await t.rejects(new RespPipeline(dead).send(respCommand('PUBLISH', 'c', 'm'), 1), /not ready/);
});
