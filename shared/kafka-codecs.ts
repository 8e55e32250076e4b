/**
 * Teaches kafkajs to read record batches compressed with Snappy, LZ4 or ZSTD, for the whole process:
 * kafkajs looks a batch's codec up in one shared table each time it decodes one. Import it before any
 * kafkajs client reads; notification's consumer (cloud/notification/kafka.ts) and telemetry's
 * composition root (cloud/telemetry/main.ts) do.
 *
 * kafkajs 2.2.4 decodes only gzip by itself: a batch of another codec fails the decoding of the whole
 * fetch, so the consumer crashes, reconnects, fetches the same offset and fails again, forever, and no
 * record after it is ever read. Such batches are common: Java, Go and librdkafka producers often
 * compress, and a topic whose `compression.type` is `snappy`, `lz4` or `zstd` makes the broker
 * recompress even the uncompressed records our own producers send.
 *
 * The decoders are pure JavaScript (no native build): snappyjs, lz4js (Kafka's LZ4 is the LZ4 frame
 * format) and fzstd. Our producers never compress, so compressing with these codecs is refused with a
 * {@link CompressionNotSupportedError} rather than half supported.
 *
 * Any producer can write to our topics, and these decoders allocate whatever size a batch claims: a
 * few crafted bytes would make the process allocate gigabytes at once, be killed, and fail again on
 * the same record after every restart. So a batch, gzip included, may decompress to at most
 * {@link MAX_DECOMPRESSED_BATCH_BYTES}; each decoder reads the sizes a batch declares, and what its
 * bytes can hold by the codec's format, before it allocates anything, and refuses a batch over the
 * limit with a {@link BatchDecompressionLimitError}. kafkajs then fails the fetch as for any batch it
 * cannot decode: the consumer stops on that record, but the process lives.
 */
import { createRequire } from 'node:module';
import { gzip, unzip } from 'node:zlib';
import { decompress as zstdDecompress } from 'fzstd';
import kafkajs from 'kafkajs';

/** What kafkajs asks of a codec: `compress` gets the encoder of the records, `decompress` their bytes. */
interface KafkaCodec {
  compress(encoder: { buffer: Buffer }): Promise<Buffer>;
  decompress(buffer: Buffer): Promise<Buffer>;
}

const require = createRequire(import.meta.url);
// Node cannot name these among kafkajs's CommonJS exports, so they are read from the module object.
const { CompressionCodecs, CompressionTypes } = kafkajs;

/** snappyjs and lz4js ship no types; these are the calls used, as their sources define them. */
interface SnappyJs {
  /** Throws, before allocating, when the block declares more than `maxLength` bytes. */
  uncompress(compressed: Buffer, maxLength: number): Buffer;
}
interface Lz4Js {
  /** Decodes one block's sequences into `dst` from `dIndex`; returns where the output ends. */
  decompressBlock(src: Uint8Array, dst: Uint8Array, sIndex: number, sLength: number, dIndex: number): number;
}

/**
 * The most bytes one batch may decompress to: 64 MiB. A broker accepts a batch of at most
 * `message.max.bytes` compressed bytes (1 MiB by default, which is also what kafkajs fetches per
 * partition), and batches of records such as ours compress 5 to 20 fold: a real batch stays far under
 * this, while a crafted one claiming gigabytes from a few bytes is refused. The limit is per batch: a
 * fetch of many small batches, each under it, still adds up (ZSTD writes 128 KiB from a 4-byte block).
 */
export const MAX_DECOMPRESSED_BATCH_BYTES = 64 * 1024 * 1024;
/** The highest limit accepted: the decoders index their output with 32-bit integers. */
const HIGHEST_LIMIT = 2 ** 31 - 1;

export interface DecompressionLimits {
  /** The most bytes one batch may decompress to. Default {@link MAX_DECOMPRESSED_BATCH_BYTES}. */
  maxDecompressedBytes?: number;
}

/** Asked to produce with a codec this module only decodes. */
export class CompressionNotSupportedError extends Error {
  readonly code = 'ERR_KAFKA_COMPRESSION_NOT_SUPPORTED';
  constructor(readonly codec: string) {
    super(`producing ${codec}-compressed Kafka records is not supported: send them uncompressed (compression: CompressionTypes.None) or with GZIP`);
    this.name = 'CompressionNotSupportedError';
  }
}

/** A batch that would decompress to more than the limit, refused before its output is allocated. */
export class BatchDecompressionLimitError extends Error {
  readonly code = 'ERR_KAFKA_DECOMPRESSION_LIMIT';
  constructor(
    readonly codec: string,
    readonly limit: number,
    detail: string,
  ) {
    super(
      `refused a Kafka batch compressed with ${codec}: ${detail}. A batch may decompress to at most ${limit} bytes (MAX_DECOMPRESSED_BATCH_BYTES, shared/kafka-codecs.ts), ` +
        'so that a crafted one cannot exhaust the memory of the process; the records of this one cannot be read: have its producer send smaller batches',
    );
    this.name = 'BatchDecompressionLimitError';
  }
}

/** A batch its codec's format cannot decode: truncated, inconsistent, or using what Kafka never uses. */
export class UndecodableBatchError extends Error {
  readonly code = 'ERR_KAFKA_UNDECODABLE_BATCH';
  constructor(
    readonly codec: string,
    detail: string,
  ) {
    super(`cannot decode a Kafka batch compressed with ${codec}: ${detail}`);
    this.name = 'UndecodableBatchError';
  }
}

function decompressionLimit({ maxDecompressedBytes = MAX_DECOMPRESSED_BATCH_BYTES }: DecompressionLimits): number {
  if (!Number.isSafeInteger(maxDecompressedBytes) || maxDecompressedBytes < 1 || maxDecompressedBytes > HIGHEST_LIMIT) {
    throw new RangeError(`maxDecompressedBytes: expected a whole number of bytes from 1 to ${HIGHEST_LIMIT}, got ${maxDecompressedBytes}`);
  }
  return maxDecompressedBytes;
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

/** The header of xerial snappy-java's stream, which Java clients wrap Snappy batches in: magic, version, compatible version. */
const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_LENGTH = 16;
/** A Snappy element writes at most 64 bytes from 3 (a copy with a 2-byte offset): what n bytes can hold. */
const SNAPPY_MAX_OUTPUT_PER_3_BYTES = 64;

/** The blocks of xerial's stream: after its header, each prefixed by its length as a big-endian int32. */
function xerialBlocks(buffer: Buffer): Buffer[] {
  const blocks: Buffer[] = [];
  for (let at = XERIAL_HEADER_LENGTH; at < buffer.length; ) {
    const end = at + 4 <= buffer.length ? at + 4 + buffer.readUInt32BE(at) : Number.POSITIVE_INFINITY;
    if (end > buffer.length) throw new UndecodableBatchError('Snappy', `truncated xerial Snappy stream: the block at byte ${at} runs past its ${buffer.length} bytes`);
    blocks.push(buffer.subarray(at + 4, end));
    at = end;
  }
  return blocks;
}

/** The uncompressed length a raw Snappy block starts with (a varint of up to 5 bytes), and that varint's size. */
function snappyPreamble(block: Buffer): { length: number; size: number } {
  let length = 0;
  for (let i = 0; i < 5 && i < block.length; i++) {
    const byte = block.readUInt8(i);
    length += (byte & 0x7f) * 2 ** (7 * i);
    if (byte < 0x80) return { length, size: i + 1 };
  }
  throw new UndecodableBatchError('Snappy', 'a block does not start with its uncompressed length');
}

/**
 * Decodes a Snappy batch: either one raw Snappy block (librdkafka, kafkajs-snappy), or xerial's stream
 * (Java clients): its 16-byte header, then blocks each prefixed by its length as a big-endian int32.
 * snappyjs allocates the length a block declares, so the declared lengths are summed first and a
 * block declaring more than its bytes can hold is refused.
 *
 * @example
 * decompressSnappy(batchBytes).toString(); // the records of the batch, uncompressed
 */
export function decompressSnappy(buffer: Buffer, limits: DecompressionLimits = {}): Buffer {
  const limit = decompressionLimit(limits);
  const xerial = buffer.length >= XERIAL_HEADER_LENGTH && buffer.subarray(0, XERIAL_MAGIC.length).equals(XERIAL_MAGIC);
  const blocks = (xerial ? xerialBlocks(buffer) : [buffer]).map((block) => ({ block, ...snappyPreamble(block) }));
  const total = sum(blocks.map(({ length }) => length));
  if (total > limit) throw new BatchDecompressionLimitError('Snappy', limit, `${xerial ? 'its blocks declare' : 'it declares'} ${total} bytes`);
  for (const { block, length, size } of blocks) {
    const capacity = Math.floor(((block.length - size) * SNAPPY_MAX_OUTPUT_PER_3_BYTES) / 3);
    if (length > capacity) throw new UndecodableBatchError('Snappy', `a block declares ${length} uncompressed bytes but its ${block.length - size} bytes hold at most ${capacity}`);
  }
  const snappy = require('snappyjs') as SnappyJs;
  return Buffer.concat(
    blocks.map(({ block, length }) => snappy.uncompress(block, length)),
    total,
  );
}

const LZ4_MAGIC = 0x184d2204;
/** The frame descriptor's flags (lz4_Frame_format.md). */
const LZ4_VERSION_MASK = 0xc0;
const LZ4_VERSION_1 = 0x40;
const LZ4_BLOCK_CHECKSUMS = 0x10;
const LZ4_CONTENT_SIZE = 0x08;
const LZ4_DICTIONARY_ID = 0x01;
/** A block's size word: its high bit marks a block stored uncompressed. */
const LZ4_STORED = 0x80000000;
/** The most a block may decode to, by the descriptor's block size id. */
const LZ4_BLOCK_MAX_SIZES: ReadonlyMap<number, number> = new Map([
  [4, 64 * 1024],
  [5, 256 * 1024],
  [6, 1024 * 1024],
  [7, 4 * 1024 * 1024],
]);
/** An LZ4 sequence writes at most 255 bytes per byte it takes (each length byte of 255 adds 255). */
const LZ4_MAX_OUTPUT_PER_BYTE = 255;

interface Lz4Block {
  /** Where its data starts in the frame. */
  start: number;
  length: number;
  compressed: boolean;
  /** The most it can decode to. */
  bound: number;
}

function lz4Undecodable(detail: string): UndecodableBatchError {
  return new UndecodableBatchError('LZ4', detail);
}

/**
 * Reads an LZ4 frame's descriptor and the place of its blocks, without decoding them. Unlike lz4js, it
 * finds each block checksum after its block, where the format puts it (lz4js read it as the start of
 * the block), and refuses a frame that needs a dictionary. Checksums are skipped, not verified.
 */
function readLz4Frame(buffer: Buffer): { contentSize: number | undefined; blocks: Lz4Block[] } {
  const truncated = () => lz4Undecodable(`the LZ4 frame is truncated at ${buffer.length} bytes`);
  if (buffer.length < 7) throw truncated();
  if (buffer.readUInt32LE(0) !== LZ4_MAGIC) throw lz4Undecodable('it does not start with the LZ4 frame magic number');
  const flags = buffer.readUInt8(4);
  if ((flags & LZ4_VERSION_MASK) !== LZ4_VERSION_1) throw lz4Undecodable(`the LZ4 frame has version ${flags >> 6}, not 1`);
  const blockMaxSize = LZ4_BLOCK_MAX_SIZES.get((buffer.readUInt8(5) >> 4) & 7);
  if (blockMaxSize === undefined) throw lz4Undecodable(`the LZ4 frame has block size id ${(buffer.readUInt8(5) >> 4) & 7}, not 4 to 7`);
  let at = 6;
  let contentSize: number | undefined;
  if (flags & LZ4_CONTENT_SIZE) {
    if (at + 8 > buffer.length) throw truncated();
    contentSize = Number(buffer.readBigUInt64LE(at));
    at += 8;
  }
  if (flags & LZ4_DICTIONARY_ID) {
    if (at + 4 > buffer.length) throw truncated();
    throw lz4Undecodable(`the LZ4 frame names dictionary ${buffer.readUInt32LE(at)}: Kafka producers use none, and this decoder has none`);
  }
  at += 1; // the header checksum
  const checksumLength = flags & LZ4_BLOCK_CHECKSUMS ? 4 : 0;
  const blocks: Lz4Block[] = [];
  for (;;) {
    if (at + 4 > buffer.length) throw truncated();
    const word = buffer.readUInt32LE(at);
    if (word === 0) return { contentSize, blocks };
    const compressed = word < LZ4_STORED;
    const length = compressed ? word : word - LZ4_STORED;
    if (length > blockMaxSize) throw lz4Undecodable(`the block at byte ${at} holds ${length} bytes, over the frame's ${blockMaxSize}-byte blocks`);
    if (at + 4 + length + checksumLength > buffer.length) throw truncated();
    blocks.push({ start: at + 4, length, compressed, bound: compressed ? Math.min(blockMaxSize, length * LZ4_MAX_OUTPUT_PER_BYTE) : length });
    at += 4 + length + checksumLength;
  }
}

/**
 * Decodes an LZ4 frame. Its output is sized by what its blocks can hold (lz4js sized it by the content
 * size the frame declares, or by a whole block for each block however small), and refused over the limit.
 *
 * @example
 * decompressLz4(batchBytes).toString(); // the records of the batch, uncompressed
 */
export function decompressLz4(buffer: Buffer, limits: DecompressionLimits = {}): Buffer {
  const limit = decompressionLimit(limits);
  const { contentSize, blocks } = readLz4Frame(buffer);
  if (contentSize !== undefined && contentSize > limit) throw new BatchDecompressionLimitError('LZ4', limit, `its frame declares ${contentSize} bytes of content`);
  const bound = sum(blocks.map((block) => block.bound));
  if (bound > limit) throw new BatchDecompressionLimitError('LZ4', limit, `its blocks could decode to ${bound} bytes`);
  // Required at first use: lz4js allocates its 5 MiB compression buffer when loaded.
  const { decompressBlock } = require('lz4js') as Lz4Js;
  // One buffer for all blocks: a block may copy from the ones before it (linked blocks).
  const output = Buffer.alloc(bound);
  let end = 0;
  for (const block of blocks) {
    const start = end;
    end = block.compressed ? decompressBlock(buffer, output, block.start, block.length, start) : start + buffer.copy(output, start, block.start, block.start + block.length);
    if (end - start > block.bound) throw lz4Undecodable(`the block at byte ${block.start - 4} decodes past the ${block.bound} bytes it can hold`);
  }
  if (contentSize !== undefined && end !== contentSize) throw lz4Undecodable(`the frame declares ${contentSize} bytes of content but holds ${end}`);
  return end === output.length ? output : Buffer.from(output.subarray(0, end));
}

const ZSTD_MAGIC = 0xfd2fb528;
/** Skippable frames have magic numbers 0x184D2A50 to 0x184D2A5F. */
const ZSTD_SKIPPABLE_MAGIC_HIGH = 0x184d2a5;
/** The most a block may hold, compressed or not, and decode to, when the window is at least as large (RFC 8878, 3.1.1.2). */
const ZSTD_BLOCK_MAX_SIZE = 128 * 1024;
const ZSTD_RESERVED_BIT = 0x08;
const ZSTD_RLE_BLOCK = 1;
const ZSTD_COMPRESSED_BLOCK = 2;
const ZSTD_RESERVED_BLOCK = 3;
/**
 * fzstd decodes a frame of unknown content size through a window it shifts whole for each block it
 * decodes, so a block costs the window in copying. A batch may cost this many times the limit: what a
 * batch of the limit's size costs in full 128 KiB blocks under an 8 MiB window (zstd's largest below
 * its ultra levels). Many tiny blocks under a large window would otherwise keep the process busy for
 * minutes: 2 ms a block under 64 MiB, measured.
 */
const ZSTD_WINDOW_COPY_FACTOR = 64;

interface ZstdFrame {
  /** Where the next frame starts. */
  end: number;
  contentSize: number | undefined;
  windowSize: number;
  /** Where its window descriptor is, when it has one (frames not single-segment). */
  windowDescriptorAt: number | undefined;
  blocks: number;
  /** The most its blocks can decode to. */
  bound: number;
}

function zstdUndecodable(detail: string): UndecodableBatchError {
  return new UndecodableBatchError('ZSTD', detail);
}

/**
 * Reads the ZSTD frame at `start` (RFC 8878, 3.1.1): its header and the place and size of its blocks,
 * without decoding them. Refuses what fzstd would misread: a reserved bit or block type, a dictionary,
 * a block over its maximum size (fzstd never checks it, and decodes 2 MiB from a 4-byte RLE block).
 */
function readZstdFrame(buffer: Buffer, start: number): ZstdFrame {
  const need = (at: number, bytes: number) => {
    if (at + bytes > buffer.length) throw zstdUndecodable(`the frame at byte ${start} is truncated at ${buffer.length} bytes`);
  };
  let at = start + 4;
  need(at, 1);
  const descriptor = buffer.readUInt8(at++);
  if (descriptor & ZSTD_RESERVED_BIT) throw zstdUndecodable(`the frame at byte ${start} sets a reserved bit`);
  const singleSegment = (descriptor & 0x20) !== 0;
  const checksumLength = descriptor & 0x04 ? 4 : 0;
  const dictionaryIdLength = [0, 1, 2, 4][descriptor & 3]!;
  const contentSizeLength = [singleSegment ? 1 : 0, 2, 4, 8][descriptor >> 6]!;
  let windowSize = 0;
  let windowDescriptorAt: number | undefined;
  if (!singleSegment) {
    need(at, 1);
    windowDescriptorAt = at;
    windowSize = zstdWindowSize(buffer.readUInt8(at++));
  }
  need(at, dictionaryIdLength + contentSizeLength);
  const dictionaryId = dictionaryIdLength > 0 ? buffer.readUIntLE(at, dictionaryIdLength) : 0;
  if (dictionaryId !== 0) throw zstdUndecodable(`the frame at byte ${start} needs dictionary ${dictionaryId}: Kafka producers use none, and this decoder has none`);
  at += dictionaryIdLength;
  let contentSize: number | undefined;
  if (contentSizeLength === 8) contentSize = Number(buffer.readBigUInt64LE(at));
  else if (contentSizeLength > 0) contentSize = buffer.readUIntLE(at, contentSizeLength) + (contentSizeLength === 2 ? 256 : 0);
  at += contentSizeLength;
  if (singleSegment) windowSize = contentSize ?? 0;
  const blockMaxSize = Math.min(windowSize, ZSTD_BLOCK_MAX_SIZE);
  let blocks = 0;
  let bound = 0;
  for (let last = false; !last; blocks++) {
    need(at, 3);
    const header = buffer.readUIntLE(at, 3);
    const type = (header >> 1) & 3;
    const size = header >> 3;
    if (type === ZSTD_RESERVED_BLOCK) throw zstdUndecodable(`the block at byte ${at} has the reserved block type`);
    if (size > blockMaxSize) throw zstdUndecodable(`a block of ${size} bytes at byte ${at}, over the ${blockMaxSize} bytes a block may hold`);
    need(at + 3, type === ZSTD_RLE_BLOCK ? 1 : size);
    at += 3 + (type === ZSTD_RLE_BLOCK ? 1 : size);
    bound += type === ZSTD_COMPRESSED_BLOCK ? blockMaxSize : size;
    last = (header & 1) === 1;
  }
  need(at, checksumLength);
  return { end: at + checksumLength, contentSize, windowSize, windowDescriptorAt, blocks, bound };
}

/** The window a window descriptor gives (RFC 8878, 3.1.1.1.2): 2^(10 + exponent), plus eighths of it. */
function zstdWindowSize(descriptor: number): number {
  const base = 2 ** (10 + (descriptor >> 3));
  return base + (base / 8) * (descriptor & 7);
}

/** The window descriptor of the smallest window that holds `bytes`. */
function zstdWindowDescriptorFor(bytes: number): number {
  let descriptor = 0;
  while (zstdWindowSize(descriptor) < bytes) descriptor++;
  return descriptor;
}

/** The ZSTD frames of a batch, skippable frames left out. */
function readZstdFrames(buffer: Buffer): ZstdFrame[] {
  const frames: ZstdFrame[] = [];
  for (let at = 0; at < buffer.length; ) {
    if (at + 4 > buffer.length) throw zstdUndecodable(`the batch ends within a frame's magic number at byte ${at}`);
    const magic = buffer.readUInt32LE(at);
    if (magic >>> 4 === ZSTD_SKIPPABLE_MAGIC_HIGH) {
      if (at + 8 > buffer.length) throw zstdUndecodable(`the skippable frame at byte ${at} is truncated`);
      at += 8 + buffer.readUInt32LE(at + 4);
      continue;
    }
    if (magic !== ZSTD_MAGIC) throw zstdUndecodable(`no ZSTD frame at byte ${at}`);
    const frame = readZstdFrame(buffer, at);
    frames.push(frame);
    at = frame.end;
  }
  return frames;
}

/**
 * Decodes ZSTD frames. fzstd allocates a frame's declared content size, or else its window, then the
 * frame's blocks: all are checked against the limit before fzstd runs. A match never reaches back past
 * its frame's start, so a window larger than what the frame's blocks can hold is never used: fzstd is
 * given the smallest window that holds them instead (a Java producer asks for 2 MiB, a level-22 one for
 * 128 MiB, even for a few KiB of records).
 *
 * @example
 * decompressZstd(batchBytes).toString(); // the records of the batch, uncompressed
 */
export function decompressZstd(buffer: Buffer, limits: DecompressionLimits = {}): Buffer {
  const limit = decompressionLimit(limits);
  const refuse = (detail: string) => new BatchDecompressionLimitError('ZSTD', limit, detail);
  let frames = buffer;
  let output = 0;
  let windowCopies = 0;
  let windowedBlocks = 0;
  for (const { contentSize, windowSize, windowDescriptorAt, bound, blocks } of readZstdFrames(buffer)) {
    if (contentSize !== undefined && contentSize > limit) throw refuse(`a frame declares ${contentSize} bytes of content`);
    if (contentSize !== undefined && contentSize > bound) throw zstdUndecodable(`a frame declares ${contentSize} bytes of content but its blocks hold at most ${bound}`);
    // fzstd decodes a frame of known, non-zero size in place; any other through a window.
    if (contentSize !== undefined && contentSize > 0) {
      output += contentSize;
      continue;
    }
    let window = windowSize;
    if (windowDescriptorAt !== undefined && bound < windowSize) {
      const fitted = zstdWindowDescriptorFor(bound);
      if (frames === buffer) frames = Buffer.from(buffer);
      frames[windowDescriptorAt] = fitted;
      window = zstdWindowSize(fitted);
    }
    if (window > limit) throw refuse(`a frame needs a window of ${window} bytes`);
    output += bound;
    windowCopies += blocks * window;
    windowedBlocks += blocks;
  }
  if (output > limit) throw refuse(`its frames could decode to ${output} bytes`);
  if (windowCopies > limit * ZSTD_WINDOW_COPY_FACTOR) {
    throw refuse(`its ${windowedBlocks} blocks would make the decoder copy ${windowCopies} bytes through their windows, over ${ZSTD_WINDOW_COPY_FACTOR} times the limit`);
  }
  return asBuffer(zstdDecompress(frames));
}

/**
 * Decodes gzip (kafkajs's own codec, which set no limit), stopping past the limit: a deflate stream
 * writes up to about 1,000 bytes per byte.
 *
 * @example
 * await decompressGzip(batchBytes); // the records of the batch, uncompressed
 */
export function decompressGzip(buffer: Buffer, limits: DecompressionLimits = {}): Promise<Buffer> {
  const limit = decompressionLimit(limits);
  return new Promise((resolve, reject) => {
    unzip(buffer, { maxOutputLength: limit }, (error, output) => {
      if ((error as NodeJS.ErrnoException | null)?.code === 'ERR_BUFFER_TOO_LARGE') reject(new BatchDecompressionLimitError('gzip', limit, `it decompresses to more than ${limit} bytes`));
      else if (error) reject(error);
      else resolve(output);
    });
  });
}

/** Compresses as kafkajs's own gzip codec does. */
function compressGzip(encoder: { buffer: Buffer }): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    gzip(encoder.buffer, (error, output) => (error ? reject(error) : resolve(output)));
  });
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function decodeOnly(codec: string, decompress: (buffer: Buffer) => Buffer): KafkaCodec {
  return {
    compress: async () => {
      throw new CompressionNotSupportedError(codec);
    },
    decompress: async (buffer) => decompress(buffer),
  };
}

/**
 * Registers the decoders in kafkajs's codec table, and replaces kafkajs's gzip codec by one whose
 * decoder is bounded by the same limit (it compresses as kafkajs's does); kafkajs looks a codec up for
 * each batch it reads. Idempotent; done with the default limit when this module is imported.
 *
 * @example
 * import '../../shared/kafka-codecs.js'; // before `new Kafka(…)`
 */
export function registerKafkaCodecs(limits: DecompressionLimits = {}): void {
  decompressionLimit(limits);
  const boundedGzip: KafkaCodec = { compress: compressGzip, decompress: (buffer) => decompressGzip(buffer, limits) };
  const snappy = decodeOnly('Snappy', (buffer) => decompressSnappy(buffer, limits));
  const lz4 = decodeOnly('LZ4', (buffer) => decompressLz4(buffer, limits));
  const zstd = decodeOnly('ZSTD', (buffer) => decompressZstd(buffer, limits));
  CompressionCodecs[CompressionTypes.GZIP] = () => boundedGzip;
  CompressionCodecs[CompressionTypes.Snappy] = () => snappy;
  CompressionCodecs[CompressionTypes.LZ4] = () => lz4;
  CompressionCodecs[CompressionTypes.ZSTD] = () => zstd;
}

registerKafkaCodecs();
