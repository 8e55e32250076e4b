/**
 * Round-trips each server of `bash tools/stack up` through the client the services use:
 * pg, ioredis (pub/sub and a stream consumer group), kafkajs and the MongoDB driver (on FerretDB).
 */
import t from 'tap';
import pg from 'pg';
import { Redis } from 'ioredis';
import '../../shared/kafkajs-idle-loop.js';
import { Kafka, Partitioners, logLevel } from 'kafkajs';
import { MongoClient, MongoServerError } from 'mongodb';
import { freshMongoUri, freshPgDatabase, stackEnv, uniqueName } from '../support/stack.js';

const env = stackEnv();

t.test('postgres: select 1, and a fresh database of its own', async (t) => {
  const main = new pg.Client({ connectionString: env.DATABASE_URL });
  await main.connect();
  t.teardown(() => main.end());
  const one = await main.query<{ one: number; who: string }>('select 1::int as one, current_user as who');
  t.same(one.rows, [{ one: 1, who: 'lintel' }]);

  const url = await freshPgDatabase(t);
  t.match(url, /\/lintel_test_[0-9a-f]{12}$/);
  const fresh = new pg.Client({ connectionString: url });
  await fresh.connect();
  t.teardown(() => fresh.end());
  await fresh.query('create table reading (zone text primary key, people int not null)');
  await fresh.query("insert into reading values ('lobby', 4), ('cafe', 11)");
  const rows = await fresh.query<{ zone: string; people: number }>('select zone, people from reading order by zone');
  t.same(rows.rows, [
    { zone: 'cafe', people: 11 },
    { zone: 'lobby', people: 4 },
  ]);
});

t.test('redis: publish/subscribe', async (t) => {
  const subscriber = new Redis(env.REDIS_URL);
  const publisher = new Redis(env.REDIS_URL);
  t.teardown(async () => {
    await subscriber.quit();
    await publisher.quit();
  });
  const channel = uniqueName('smoke_channel');
  const received = new Promise<[string, string]>((resolve) => {
    subscriber.on('message', (from: string, message: string) => resolve([from, message]));
  });
  t.equal(await subscriber.subscribe(channel), 1);
  t.equal(await publisher.publish(channel, 'hello lintel'), 1, 'one subscriber got it');
  t.same(await received, [channel, 'hello lintel']);
});

t.test('redis: stream XADD and XREADGROUP with a consumer group', async (t) => {
  const redis = new Redis(env.REDIS_URL);
  const key = uniqueName('smoke_stream');
  t.teardown(async () => {
    await redis.del(key);
    await redis.quit();
  });
  t.equal(await redis.xgroup('CREATE', key, 'workers', '$', 'MKSTREAM'), 'OK');
  const id1 = await redis.xadd(key, '*', 'zone', 'lobby', 'people', '4');
  const id2 = await redis.xadd(key, '*', 'zone', 'cafe', 'people', '11');
  t.ok(id1 && id2, 'XADD returned ids');

  const read = (await redis.xreadgroup('GROUP', 'workers', 'worker-1', 'COUNT', 10, 'STREAMS', key, '>')) as
    | [string, [string, string[]][]][]
    | null;
  t.same(read, [
    [
      key,
      [
        [id1, ['zone', 'lobby', 'people', '4']],
        [id2, ['zone', 'cafe', 'people', '11']],
      ],
    ],
  ]);
  const pending = (await redis.xpending(key, 'workers')) as [number, string, string, [string, string][]];
  t.equal(pending[0], 2, 'both entries pending until acknowledged');
  t.equal(await redis.xack(key, 'workers', id1 as string, id2 as string), 2);
  const after = (await redis.xpending(key, 'workers')) as [number, ...unknown[]];
  t.equal(after[0], 0, 'nothing pending after XACK');
});

t.test('kafka: produce and consume on a new topic', async (t) => {
  const kafka = new Kafka({
    clientId: uniqueName('smoke'),
    brokers: env.KAFKA_BROKERS.split(','),
    logLevel: logLevel.ERROR,
  });
  const topic = uniqueName('smoke_topic');
  const admin = kafka.admin();
  await admin.connect();
  t.teardown(async () => {
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
  });
  t.equal(await admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: 1 }], waitForLeaders: true }), true);
  t.ok((await admin.listTopics()).includes(topic), 'topic listed');

  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  t.teardown(() => producer.disconnect());
  const sent = ['one', 'two', 'three'];
  await producer.send({ topic, messages: sent.map((value) => ({ key: 'zone-1', value })) });

  const consumer = kafka.consumer({ groupId: uniqueName('smoke_group') });
  await consumer.connect();
  t.teardown(() => consumer.disconnect());
  await consumer.subscribe({ topic, fromBeginning: true });
  const got: { key: string; value: string; partition: number }[] = [];
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`consumed only ${got.length} of ${sent.length} messages`)), 20_000);
    consumer
      .run({
        eachMessage: async ({ message, partition }) => {
          got.push({ key: message.key?.toString() ?? '', value: message.value?.toString() ?? '', partition });
          if (got.length === sent.length) {
            clearTimeout(timer);
            resolve();
          }
        },
      })
      .catch(reject);
  });
  // One key goes to one partition, so the order is kept.
  t.same(
    got.map((m) => m.value),
    sent,
  );
  t.equal(new Set(got.map((m) => m.partition)).size, 1, 'same key, same partition');
  t.ok(got.every((m) => m.key === 'zone-1'));
});

t.test('mongodb (FerretDB): insert, find, unique index violation', async (t) => {
  const uri = await freshMongoUri(t);
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 10_000 });
  await client.connect();
  t.teardown(() => client.close());
  const db = client.db();
  t.match(db.databaseName, /^lintel_test_[0-9a-f]{12}$/);
  const devices = db.collection<{ serial: string; zone: string; people: number }>('devices');

  const inserted = await devices.insertOne({ serial: 'AP-001', zone: 'lobby', people: 4 });
  t.ok(inserted.acknowledged);
  await devices.insertOne({ serial: 'AP-002', zone: 'cafe', people: 11 });
  const found = await devices.find({ people: { $gt: 5 } }, { projection: { _id: 0 } }).toArray();
  t.same(found, [{ serial: 'AP-002', zone: 'cafe', people: 11 }]);
  const byId = await devices.findOne({ _id: inserted.insertedId });
  t.equal(byId?.serial, 'AP-001');

  t.equal(await devices.createIndex({ serial: 1 }, { unique: true }), 'serial_1');
  const err = await devices.insertOne({ serial: 'AP-001', zone: 'roof', people: 0 }).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof MongoServerError, 'duplicate rejected by the server');
  t.equal((err as MongoServerError).code, 11000);
  t.equal(await devices.countDocuments(), 2);
});
