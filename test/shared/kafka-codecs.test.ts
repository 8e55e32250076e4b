/**
 * kafkajs reads Snappy, LZ4 and ZSTD batches once shared/kafka-codecs.ts is imported: the decoders on
 * their own (Snappy raw and in xerial's stream, as Java clients write it), and against the stack's real
 * Kafka, records the broker stored compressed because of the topic's `compression.type`.
 */
import { createRequire } from 'node:module';
import t from 'tap';
import kafkajs from 'kafkajs';
import { CompressionNotSupportedError, decompressLz4, decompressSnappy } from '../../shared/kafka-codecs.js';
import { directKafka, stackBrokers, uniqueName } from '../cloud/telemetry/support/kafka.js';
import { compressedTopic } from '../support/compressed-topic.js';

const require = createRequire(import.meta.url);
const snappyjs = require('snappyjs') as { compress(data: Buffer): Buffer };
const lz4js = require('lz4js') as { compress(data: Uint8Array): Uint8Array };
const { CompressionCodecs, CompressionTypes } = kafkajs;

const CODECS = [
  { name: 'snappy', type: CompressionTypes.Snappy },
  { name: 'lz4', type: CompressionTypes.LZ4 },
  { name: 'zstd', type: CompressionTypes.ZSTD },
] as const;

/** xerial snappy-java's stream: magic, version 1, compatible version 1, then length-prefixed blocks. */
function xerialStream(blocks: Buffer[]): Buffer {
  const header = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00, 0, 0, 0, 1, 0, 0, 0, 1]);
  const framed = blocks.map((block) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(block.length);
    return Buffer.concat([length, block]);
  });
  return Buffer.concat([header, ...framed]);
}

t.test('Snappy: a raw block and a xerial stream of blocks both decode', async (t) => {
  const first = Buffer.from('first block '.repeat(40));
  const second = Buffer.from('second block '.repeat(40));
  t.same(decompressSnappy(snappyjs.compress(first)), first, 'a raw block (librdkafka, kafkajs-snappy)');
  t.same(decompressSnappy(xerialStream([snappyjs.compress(first), snappyjs.compress(second)])), Buffer.concat([first, second]), 'a xerial stream (Java clients)');
  const truncated = xerialStream([snappyjs.compress(first)]).subarray(0, -3);
  t.throws(() => decompressSnappy(truncated), /truncated xerial Snappy stream: the block at byte 16 runs past/);
});

t.test('LZ4: a frame decodes to a Buffer kafkajs can read', async (t) => {
  const records = Buffer.from('records '.repeat(200));
  const decoded = decompressLz4(Buffer.from(lz4js.compress(records)));
  t.ok(Buffer.isBuffer(decoded));
  t.same(decoded, records);
});

t.test('producing with these codecs is refused with a clear error', async (t) => {
  for (const { name, type } of CODECS) {
    const codec = CompressionCodecs[type]() as { compress(encoder: { buffer: Buffer }): Promise<Buffer> };
    await t.rejects(codec.compress({ buffer: Buffer.from('x') }), CompressionNotSupportedError, `${name}: refused`);
  }
  await t.rejects((CompressionCodecs[CompressionTypes.LZ4]() as { compress(e: { buffer: Buffer }): Promise<Buffer> }).compress({ buffer: Buffer.alloc(1) }), {
    code: 'ERR_KAFKA_COMPRESSION_NOT_SUPPORTED',
    message: /producing LZ4-compressed Kafka records is not supported: send them uncompressed/,
  });
});

/** Notes which codecs kafkajs looks up while the test runs; the table is restored at teardown. */
function codecsLookedUp(t: { teardown(fn: () => void): void }): Set<string> {
  const seen = new Set<string>();
  for (const { name, type } of CODECS) {
    const lookup = CompressionCodecs[type];
    CompressionCodecs[type] = () => {
      seen.add(name);
      return lookup();
    };
    t.teardown(() => {
      CompressionCodecs[type] = lookup;
    });
  }
  return seen;
}

for (const { name } of CODECS) {
  t.test(`records the broker stored ${name}-compressed are read back whole`, async (t) => {
    const kafka = directKafka('kafka-codecs-test', stackBrokers());
    const topic = await compressedTopic(t, kafka, uniqueName(`codec-${name}`), name);
    const sent = Array.from({ length: 200 }, (_, i) => `{"record":${i},"padding":"${'p'.repeat(i % 50)}"}`);
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    // Sent uncompressed, as our producers do: the broker compresses them for the topic.
    await producer.send({ topic, messages: sent.map((value) => ({ value })) });
    await producer.disconnect();

    const seen = codecsLookedUp(t);
    const consumer = kafka.consumer({ groupId: uniqueName('codec-reader'), maxWaitTimeInMs: 500, retry: { retries: 0, restartOnFailure: async () => false } });
    t.teardown(() => consumer.disconnect());
    const read: string[] = [];
    const outcome = new Promise<string>((resolve) => {
      consumer.on(consumer.events.CRASH, (event) => resolve(`crashed: ${event.payload.error.name}: ${event.payload.error.message}`));
      void consumer.connect().then(async () => {
        await consumer.subscribe({ topic, fromBeginning: true });
        await consumer.run({
          eachMessage: async ({ message }) => {
            read.push(message.value?.toString() ?? '');
            if (read.length === sent.length) resolve('read');
          },
        });
      });
    });
    t.equal(await outcome, 'read', 'every record read, and the consumer did not crash');
    t.same(read, sent, 'in order, byte for byte');
    t.ok(seen.has(name), `the broker stored the batch ${name}-compressed`);
  });
}
