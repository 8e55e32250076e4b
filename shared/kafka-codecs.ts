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
 */
import { createRequire } from 'node:module';
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
  uncompress(compressed: Buffer): Buffer;
}
interface Lz4Js {
  decompress(frame: Uint8Array): Uint8Array;
}

/** Asked to produce with a codec this module only decodes. */
export class CompressionNotSupportedError extends Error {
  readonly code = 'ERR_KAFKA_COMPRESSION_NOT_SUPPORTED';
  constructor(readonly codec: string) {
    super(`producing ${codec}-compressed Kafka records is not supported: send them uncompressed (compression: CompressionTypes.None) or with GZIP`);
    this.name = 'CompressionNotSupportedError';
  }
}

/** The header of xerial snappy-java's stream, which Java clients wrap Snappy batches in: magic, version, compatible version. */
const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_LENGTH = 16;

/**
 * Decodes a Snappy batch: either one raw Snappy block (librdkafka, kafkajs-snappy), or xerial's stream
 * (Java clients): its 16-byte header, then blocks each prefixed by its length as a big-endian int32.
 *
 * @example
 * decompressSnappy(batchBytes).toString(); // the records of the batch, uncompressed
 */
export function decompressSnappy(buffer: Buffer): Buffer {
  const snappy = require('snappyjs') as SnappyJs;
  if (buffer.length < XERIAL_HEADER_LENGTH || !buffer.subarray(0, XERIAL_MAGIC.length).equals(XERIAL_MAGIC)) return snappy.uncompress(buffer);
  const blocks: Buffer[] = [];
  for (let at = XERIAL_HEADER_LENGTH; at < buffer.length; ) {
    const end = at + 4 <= buffer.length ? at + 4 + buffer.readUInt32BE(at) : Number.POSITIVE_INFINITY;
    if (end > buffer.length) throw new Error(`truncated xerial Snappy stream: the block at byte ${at} runs past its ${buffer.length} bytes`);
    blocks.push(snappy.uncompress(buffer.subarray(at + 4, end)));
    at = end;
  }
  return Buffer.concat(blocks);
}

/** Decodes an LZ4 frame. */
export function decompressLz4(buffer: Buffer): Buffer {
  // Required at first use: lz4js allocates its 5 MiB compression buffer when loaded.
  return asBuffer((require('lz4js') as Lz4Js).decompress(buffer));
}

/** Decodes ZSTD frames. */
export function decompressZstd(buffer: Buffer): Buffer {
  return asBuffer(zstdDecompress(buffer));
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
 * Registers the decoders in kafkajs's codec table; kafkajs looks a codec up for each batch it reads.
 * Idempotent; done when this module is imported.
 *
 * @example
 * import '../../shared/kafka-codecs.js'; // before `new Kafka(…)`
 */
export function registerKafkaCodecs(): void {
  const snappy = decodeOnly('Snappy', decompressSnappy);
  const lz4 = decodeOnly('LZ4', decompressLz4);
  const zstd = decodeOnly('ZSTD', decompressZstd);
  CompressionCodecs[CompressionTypes.Snappy] = () => snappy;
  CompressionCodecs[CompressionTypes.LZ4] = () => lz4;
  CompressionCodecs[CompressionTypes.ZSTD] = () => zstd;
}

registerKafkaCodecs();
