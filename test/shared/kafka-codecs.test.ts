/**
 * kafkajs reads Snappy, LZ4 and ZSTD batches once shared/kafka-codecs.ts is imported: the decoders on
 * their own (Snappy raw and in xerial's stream, as Java clients write it), and against the stack's real
 * Kafka, records the broker stored compressed because of the topic's `compression.type`.
 *
 * A batch may not decompress to more than a limit, whatever its codec: batches crafted to claim or
 * produce more are refused with an error before their output is allocated. These tests pass the decoders
 * a small limit (16 MiB) and batches that would decode to 300 MiB, and check the ArrayBuffer memory the
 * process holds afterwards; one test checks the default limit against the multi-GiB batches of the review.
 */
import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';
import t, { type Test } from 'tap';
import kafkajs from 'kafkajs';
import { CompressionNotSupportedError, decompressLz4, decompressSnappy, decompressZstd, registerKafkaCodecs } from '../../shared/kafka-codecs.js';
import { directKafka, stackBrokers, uniqueName } from '../cloud/telemetry/support/kafka.js';
import { compressedTopic } from '../support/compressed-topic.js';

const require = createRequire(import.meta.url);
const snappyjs = require('snappyjs') as { compress(data: Buffer): Buffer };
const lz4js = require('lz4js') as { compress(data: Uint8Array): Uint8Array };
const xxh32 = require('lz4js/xxh32.js') as { hash(seed: number, data: Uint8Array, index: number, length: number): number };
const { CompressionCodecs, CompressionTypes } = kafkajs;

const CODECS = [
  { name: 'snappy', type: CompressionTypes.Snappy },
  { name: 'lz4', type: CompressionTypes.LZ4 },
  { name: 'zstd', type: CompressionTypes.ZSTD },
] as const;

const MiB = 1024 * 1024;
/** The limit the bomb tests give the decoders, so that a decoder that ignores it allocates a bearable 300 MiB. */
const LIMIT = 16 * MiB;
const BOMB = 300 * MiB;
const LIMITED = { maxDecompressedBytes: LIMIT };
const REFUSED = { name: 'BatchDecompressionLimitError', code: 'ERR_KAFKA_DECOMPRESSION_LIMIT' };
const UNDECODABLE = { name: 'UndecodableBatchError', code: 'ERR_KAFKA_UNDECODABLE_BATCH' };

/**
 * Runs `decode`, keeping what it returns, and tells what it threw and how much more ArrayBuffer memory
 * the process holds afterwards: a decoder that allocated the size a batch claims still holds it here.
 */
function attempt(decode: () => unknown): { error: unknown; result: unknown; grown: number } {
  const before = process.memoryUsage().arrayBuffers;
  let result: unknown;
  let error: unknown;
  try {
    result = decode();
  } catch (caught) {
    error = caught;
  }
  return { error, result, grown: process.memoryUsage().arrayBuffers - before };
}

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

/** A raw Snappy block that claims `length` uncompressed bytes and holds one literal byte. */
function snappyClaiming(length: number): Buffer {
  const varint: number[] = [];
  for (let rest = length; ; rest = Math.floor(rest / 128)) {
    if (rest < 128) {
      varint.push(rest);
      break;
    }
    varint.push((rest % 128) | 0x80);
  }
  return Buffer.from([...varint, 0x00, 0x61]);
}

interface Lz4FrameSpec {
  /** FLG bits besides the version: 0x20 independent blocks, 0x10 block checksums, 0x08 content size, 0x04 content checksum, 0x01 dictionary. */
  flags: number;
  /** 4 (64 KiB) to 7 (4 MiB). */
  blockSizeId?: number;
  contentSize?: number;
  dictionaryId?: number;
  /** Each block's 4-byte size word (high bit: stored uncompressed) is written from its `compressed` flag. */
  blocks: Array<{ data: Buffer; compressed: boolean }>;
  content?: Buffer;
}

/** An LZ4 frame as the format (lz4_Frame_format.md) lays it out, checksums included. */
function lz4Frame(spec: Lz4FrameSpec): Buffer {
  const descriptor = [0x40 | spec.flags, (spec.blockSizeId ?? 7) << 4];
  const extra: Buffer[] = [];
  if (spec.contentSize !== undefined) {
    const size = Buffer.alloc(8);
    size.writeBigUInt64LE(BigInt(spec.contentSize));
    extra.push(size);
  }
  if (spec.dictionaryId !== undefined) extra.push(u32le(spec.dictionaryId));
  const described = Buffer.concat([Buffer.from(descriptor), ...extra]);
  const headerChecksum = (xxh32.hash(0, described, 0, described.length) >>> 8) & 0xff;
  const parts: Buffer[] = [Buffer.from([0x04, 0x22, 0x4d, 0x18]), described, Buffer.from([headerChecksum])];
  for (const { data, compressed } of spec.blocks) {
    parts.push(u32le((data.length | (compressed ? 0 : 0x80000000)) >>> 0), data);
    if (spec.flags & 0x10) parts.push(u32le(xxh32.hash(0, data, 0, data.length) >>> 0));
  }
  parts.push(u32le(0));
  if (spec.flags & 0x04 && spec.content) parts.push(u32le(xxh32.hash(0, spec.content, 0, spec.content.length) >>> 0));
  return Buffer.concat(parts);
}

function u32le(value: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32LE(value);
  return bytes;
}

/** The data of the blocks lz4js wrote in a frame of its own (no checksums, no content size). */
function lz4jsBlocks(frame: Uint8Array): Array<{ data: Buffer; compressed: boolean }> {
  const bytes = Buffer.from(frame);
  const blocks: Array<{ data: Buffer; compressed: boolean }> = [];
  for (let at = 7; ; ) {
    const word = bytes.readUInt32LE(at);
    if (word === 0) return blocks;
    const length = word & 0x7fffffff;
    blocks.push({ data: bytes.subarray(at + 4, at + 4 + length), compressed: (word & 0x80000000) === 0 });
    at += 4 + length;
  }
}

/** An LZ4 block that decodes to exactly 4 MiB: one literal, then one match of the rest at distance 1. */
function lz4FourMiBBlock(): Buffer {
  const extension = 4 * MiB - 1 - 15 - 4;
  return Buffer.concat([Buffer.from([0x1f, 0x61, 0x01, 0x00]), Buffer.alloc(Math.floor(extension / 255), 0xff), Buffer.from([extension % 255])]);
}

const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);

const ZSTD_BLOCK_TYPES = { raw: 0, rle: 1, compressed: 2 };

/** A ZSTD block header: 3 bytes, little-endian, `size << 3 | type << 1 | last`. */
function zstdBlockHeader(type: keyof typeof ZSTD_BLOCK_TYPES, size: number, last: boolean): Buffer {
  const header = size * 8 + ZSTD_BLOCK_TYPES[type] * 2 + (last ? 1 : 0);
  return Buffer.from([header & 0xff, (header >> 8) & 0xff, header >> 16]);
}

/** RLE blocks of `sizes` bytes of "a", the last one marked last. */
function zstdRleBlocks(sizes: number[]): Buffer {
  return Buffer.concat(sizes.map((size, i) => Buffer.concat([zstdBlockHeader('rle', size, i === sizes.length - 1), Buffer.from('a')])));
}

/** A single-segment frame declaring `contentSize` (4-byte field), with `blocks`. */
function zstdSizedFrame(contentSize: number, blocks: Buffer): Buffer {
  return Buffer.concat([ZSTD_MAGIC, Buffer.from([0xa0]), u32le(contentSize), blocks]);
}

/** A frame without a content size, with a window of 2^`windowLog` bytes, and `blocks`. */
function zstdWindowedFrame(windowLog: number, blocks: Buffer): Buffer {
  return Buffer.concat([ZSTD_MAGIC, Buffer.from([0x00, (windowLog - 10) << 3]), blocks]);
}

t.test('Snappy: a raw block and a xerial stream of blocks both decode', async (t) => {
  const first = Buffer.from('first block '.repeat(40));
  const second = Buffer.from('second block '.repeat(40));
  t.same(decompressSnappy(snappyjs.compress(first)), first, 'a raw block (librdkafka, kafkajs-snappy)');
  t.same(decompressSnappy(xerialStream([snappyjs.compress(first), snappyjs.compress(second)])), Buffer.concat([first, second]), 'a xerial stream (Java clients)');
  const truncated = xerialStream([snappyjs.compress(first)]).subarray(0, -3);
  t.throws(() => decompressSnappy(truncated), /truncated xerial Snappy stream: the block at byte 16 runs past/);
});

t.test('Snappy: a block claiming more than the limit is refused before its buffer is allocated', async (t) => {
  for (const [what, claim, batch] of [
    ['a raw block', 'it declares', snappyClaiming(BOMB)],
    ['a xerial block', 'its blocks declare', xerialStream([snappyClaiming(BOMB)])],
  ] as const) {
    const { error, grown } = attempt(() => decompressSnappy(batch, LIMITED));
    t.match(error, { ...REFUSED, message: new RegExp(`^refused a Kafka batch compressed with Snappy: ${claim} 314572800 bytes\\. A batch may decompress to at most 16777216 bytes`) }, `${what}: refused`);
    t.ok(grown < LIMIT, `${what}: ${grown} bytes of ArrayBuffer memory grown, less than the limit`);
  }
});

t.test('Snappy: xerial blocks are summed before any is decoded', async (t) => {
  const half = snappyjs.compress(Buffer.alloc(LIMIT / 2, 'a'));
  t.same(decompressSnappy(xerialStream([half, half]), LIMITED).length, LIMIT, 'two halves of the limit decode');
  const { error, grown } = attempt(() => decompressSnappy(xerialStream([half, half, half]), LIMITED));
  t.match(error, { ...REFUSED, message: /its blocks declare 25165824 bytes/ }, 'three halves are refused');
  t.ok(grown < LIMIT, `${grown} bytes grown`);
});

t.test('Snappy: a block claiming more than its bytes can hold is malformed, not a buffer of zeros', async (t) => {
  // A Snappy copy writes at most 64 bytes from 3, so 5 bytes cannot hold 1 MiB.
  const { error } = attempt(() => decompressSnappy(snappyClaiming(MiB)));
  t.match(error, { ...UNDECODABLE, message: /^cannot decode a Kafka batch compressed with Snappy: a block declares 1048576 uncompressed bytes but its 2 bytes hold at most 42$/ });
});

t.test('LZ4: a frame decodes to a Buffer kafkajs can read', async (t) => {
  const records = Buffer.from('records '.repeat(200));
  const decoded = decompressLz4(Buffer.from(lz4js.compress(records)));
  t.ok(Buffer.isBuffer(decoded));
  t.same(decoded, records);
});

t.test('LZ4: block checksums, which follow each block, are skipped, not read as data', async (t) => {
  const first = Buffer.from('first records '.repeat(300));
  const second = Buffer.from('second records '.repeat(300));
  const content = Buffer.concat([first, second]);
  const blocks = [...lz4jsBlocks(lz4js.compress(first)), { data: second.subarray(0, 100), compressed: false }, ...lz4jsBlocks(lz4js.compress(second.subarray(100)))];
  t.equal(blocks.filter((block) => block.compressed).length, 2, 'two compressed blocks and a stored one');
  for (const flags of [0x20 | 0x10, 0x20 | 0x10 | 0x08 | 0x04]) {
    const frame = lz4Frame({ flags, blockSizeId: 4, blocks, content, ...(flags & 0x08 ? { contentSize: content.length } : {}) });
    t.same(decompressLz4(frame), content, `FLG 0x${(0x40 | flags).toString(16)}`);
  }
});

t.test('LZ4: a frame that names a dictionary is refused', async (t) => {
  const frame = lz4Frame({ flags: 0x20 | 0x01, dictionaryId: 0x1234, blocks: [{ data: Buffer.from('records'), compressed: false }] });
  t.throws(() => decompressLz4(frame), { ...UNDECODABLE, message: /the LZ4 frame names dictionary 4660: Kafka producers use none, and this decoder has none/ });
});

t.test('LZ4: a frame declaring more content than the limit is refused before its buffer is allocated', async (t) => {
  const frame = lz4Frame({ flags: 0x20 | 0x08, contentSize: BOMB, blocks: [{ data: Buffer.from('a'), compressed: false }] });
  const { error, grown } = attempt(() => decompressLz4(frame, LIMITED));
  t.match(error, { ...REFUSED, message: /^refused a Kafka batch compressed with LZ4: its frame declares 314572800 bytes of content\. A batch may decompress to at most 16777216 bytes/ });
  t.ok(grown < LIMIT, `${grown} bytes grown`);
});

t.test('LZ4: blocks that could decode past the limit are refused before any is decoded', async (t) => {
  const block = lz4FourMiBBlock();
  const blocks = Array.from({ length: BOMB / (4 * MiB) }, () => ({ data: block, compressed: true }));
  const { error, grown } = attempt(() => decompressLz4(lz4Frame({ flags: 0x20, blocks }), LIMITED));
  t.match(error, { ...REFUSED, message: /its blocks could decode to 314572800 bytes/ });
  t.ok(grown < LIMIT, `${grown} bytes grown`);
  t.same(decompressLz4(lz4Frame({ flags: 0x20, blocks: blocks.slice(0, 2) }), LIMITED), Buffer.alloc(8 * MiB, 'a'), 'two such blocks decode');
});

t.test('LZ4: a tiny block does not cost a whole block of memory', async (t) => {
  // lz4js sized its output at 4 MiB for every compressed block however small; these 2 bytes decode to at most 510.
  const blocks = Array.from({ length: 75 }, () => ({ data: Buffer.from([0x10, 0x61]), compressed: true }));
  const { result, grown } = attempt(() => decompressLz4(lz4Frame({ flags: 0x20, blocks })));
  t.same(result, Buffer.alloc(75, 'a'));
  t.ok(grown < MiB, `${grown} bytes grown`);
});

t.test('ZSTD: a frame declaring more content than the limit is refused before its buffer is allocated', async (t) => {
  const { error, grown } = attempt(() => decompressZstd(zstdSizedFrame(BOMB, zstdRleBlocks([1])), LIMITED));
  t.match(error, { ...REFUSED, message: /^refused a Kafka batch compressed with ZSTD: a frame declares 314572800 bytes of content\. A batch may decompress to at most 16777216 bytes/ });
  t.ok(grown < LIMIT, `${grown} bytes grown`);
});

t.test('ZSTD: frames are summed before any is decoded', async (t) => {
  const frame = zstdSizedFrame(LIMIT / 2, zstdRleBlocks(Array.from({ length: LIMIT / 2 / 131072 }, () => 131072)));
  t.same(decompressZstd(Buffer.concat([frame, frame]), LIMITED), Buffer.alloc(LIMIT, 'a'), 'two frames of half the limit decode');
  const { error, grown } = attempt(() => decompressZstd(Buffer.concat([frame, frame, frame]), LIMITED));
  t.match(error, { ...REFUSED, message: /its frames could decode to 25165824 bytes/ });
  t.ok(grown < LIMIT, `${grown} bytes grown`);
});

t.test('ZSTD: a block larger than the format allows (128 KiB) is malformed', async (t) => {
  // fzstd decodes such RLE blocks, 2 MiB from 4 bytes each: 150 make 300 MiB.
  const frame = zstdWindowedFrame(20, zstdRleBlocks(Array.from({ length: 150 }, () => 2 ** 21 - 1)));
  const { error, grown } = attempt(() => decompressZstd(frame, LIMITED));
  t.match(error, { ...UNDECODABLE, message: /^cannot decode a Kafka batch compressed with ZSTD: a block of 2097151 bytes at byte 6, over the 131072 bytes a block may hold$/ });
  t.ok(grown < LIMIT, `${grown} bytes grown`);
});

t.test('ZSTD: a frame declaring more content than its blocks hold is malformed', async (t) => {
  const { error } = attempt(() => decompressZstd(zstdSizedFrame(LIMIT / 2, zstdRleBlocks([1]))));
  t.match(error, { ...UNDECODABLE, message: /a frame declares 8388608 bytes of content but its blocks hold at most 1/ });
});

t.test('ZSTD: a window is cut to what its frame holds before fzstd allocates it', async (t) => {
  // A 2 GiB window (which fzstd's 32-bit arithmetic cannot even size) over one byte.
  const frame = zstdWindowedFrame(31, zstdRleBlocks([1]));
  const copy = Buffer.from(frame);
  const { result, error, grown } = attempt(() => decompressZstd(frame, LIMITED));
  t.equal(error, undefined);
  t.same(result, Buffer.from('a'));
  t.ok(grown < LIMIT, `${grown} bytes grown`);
  t.same(frame, copy, 'the batch itself is left as it was');
});

t.test('ZSTD: many blocks under a large window are refused: fzstd copies the whole window for each', async (t) => {
  const tiny = zstdRleBlocks(Array.from({ length: 200 }, () => 1));
  t.same(decompressZstd(zstdWindowedFrame(23, tiny), LIMITED), Buffer.alloc(200, 'a'), 'under a window cut to their 200 bytes, 200 blocks decode');
  // 120 compressed blocks may each decode to 128 KiB, so the window stays 16 MiB for the 2000 blocks after them.
  const compressed = Array.from({ length: 120 }, () => Buffer.concat([zstdBlockHeader('compressed', 2, false), Buffer.from([0, 0])]));
  const frame = zstdWindowedFrame(24, Buffer.concat([...compressed, zstdRleBlocks(Array.from({ length: 2000 }, () => 1))]));
  const { error } = attempt(() => decompressZstd(frame, LIMITED));
  t.match(error, { ...REFUSED, message: /its 2120 blocks would make the decoder copy 35567697920 bytes through their windows, over 64 times the limit/ });
});

t.test('gzip: kafkajs still compresses with it, and decompresses no more than the limit', async (t) => {
  t.teardown(() => registerKafkaCodecs());
  registerKafkaCodecs({ maxDecompressedBytes: MiB });
  const gzip = CompressionCodecs[CompressionTypes.GZIP]() as { compress(e: { buffer: Buffer }): Promise<Buffer>; decompress(b: Buffer): Promise<Buffer> };
  const records = Buffer.from('records '.repeat(200));
  t.same(await gzip.decompress(await gzip.compress({ buffer: records })), records, 'a round trip');
  await t.rejects(gzip.decompress(gzipSync(Buffer.alloc(4 * MiB))), { ...REFUSED, message: /^refused a Kafka batch compressed with gzip: it decompresses to more than 1048576 bytes\. A batch may decompress to at most 1048576 bytes/ });
});

t.test('a limit that is not a whole number of bytes is refused when the codecs are registered', async (t) => {
  for (const maxDecompressedBytes of [0, 1.5, 2 ** 31, Number.NaN]) {
    t.throws(() => registerKafkaCodecs({ maxDecompressedBytes }), { name: 'RangeError', message: /^maxDecompressedBytes: expected a whole number of bytes from 1 to 2147483647, got / }, String(maxDecompressedBytes));
  }
});

t.test('the codecs kafkajs uses refuse the multi-GiB batches of the review at the default limit', async (t) => {
  const bombs = [
    { name: 'Snappy', type: CompressionTypes.Snappy, batch: xerialStream([snappyClaiming(2 ** 31 - 1), snappyClaiming(2 ** 31 - 1)]) },
    { name: 'LZ4', type: CompressionTypes.LZ4, batch: lz4Frame({ flags: 0x20 | 0x08, contentSize: 2 ** 31 - 1, blocks: [{ data: Buffer.from('a'), compressed: false }] }) },
    { name: 'LZ4', type: CompressionTypes.LZ4, batch: lz4Frame({ flags: 0x20, blocks: Array.from({ length: 600 }, () => ({ data: lz4FourMiBBlock(), compressed: true })) }) },
    { name: 'ZSTD', type: CompressionTypes.ZSTD, batch: Buffer.concat([zstdSizedFrame(2145386496, zstdRleBlocks([1])), zstdSizedFrame(2145386496, zstdRleBlocks([1]))]) },
  ] as const;
  for (const { name, type, batch } of bombs) {
    const codec = CompressionCodecs[type]() as { decompress(buffer: Buffer): Promise<Buffer> };
    const before = process.memoryUsage().arrayBuffers;
    await t.rejects(codec.decompress(batch), { ...REFUSED, message: new RegExp(`^refused a Kafka batch compressed with ${name}: .*\\. A batch may decompress to at most 67108864 bytes`) }, `${name}: refused`);
    const grown = process.memoryUsage().arrayBuffers - before;
    t.ok(grown < 64 * MiB, `${name}: ${grown} bytes grown`);
  }
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

/**
 * Sends `sent` uncompressed to a new topic whose broker stores it `codec`-compressed, then reads it with
 * a consumer that does not retry: resolves `read` once every record came back, or tells how it crashed.
 */
async function roundTrip(t: Test, codec: string, sent: string[], read: string[]): Promise<string> {
  const kafka = directKafka('kafka-codecs-test', stackBrokers());
  const topic = await compressedTopic(t, kafka, uniqueName(`codec-${codec}`), codec);
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  // Sent uncompressed, as our producers do: the broker compresses them for the topic.
  await producer.send({ topic, messages: sent.map((value) => ({ value })) });
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: uniqueName('codec-reader'), maxWaitTimeInMs: 500, retry: { retries: 0, restartOnFailure: async () => false } });
  t.teardown(() => consumer.disconnect());
  return new Promise<string>((resolve) => {
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
}

const SENT = Array.from({ length: 200 }, (_, i) => `{"record":${i},"padding":"${'p'.repeat(i % 50)}"}`);

for (const { name } of CODECS) {
  t.test(`records the broker stored ${name}-compressed are read back whole`, async (t) => {
    const seen = codecsLookedUp(t);
    const read: string[] = [];
    t.equal(await roundTrip(t, name, SENT, read), 'read', 'every record read, and the consumer did not crash');
    t.same(read, SENT, 'in order, byte for byte');
    t.ok(seen.has(name), `the broker stored the batch ${name}-compressed`);
  });
}

t.test('a batch over the limit stops the consumer with the refusal, as any undecodable batch does', async (t) => {
  // The broker's frame of the 200 records (about 10 KiB) is over this limit.
  t.teardown(() => registerKafkaCodecs());
  registerKafkaCodecs({ maxDecompressedBytes: 4096 });
  const read: string[] = [];
  t.match(await roundTrip(t, 'zstd', SENT, read), /^crashed: .*refused a Kafka batch compressed with ZSTD: .* at most 4096 bytes/);
  t.same(read, [], 'no record of the batch was handed over');
});
