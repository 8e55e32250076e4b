/**
 * Publishes accepted readings on Redis: every reading on the raw channel, and the browser view (the
 * declared fields only) on the building's filtered channel. Channel names are options so tests and
 * deployments can keep theirs apart.
 *
 * A batch is published as one pipeline of PUBLISH commands (two per reading, raw then filtered, in
 * batch order), written in one socket write on a connection of the publisher's own: each message is
 * copied once from the batch's bytes into the pipeline, with no command object per message, and
 * Redis runs plain PUBLISH commands (about half its CPU of PUBLISH from a script).
 */
import type { Redis } from 'ioredis';
import { RespPipeline } from './resp-pipeline.js';

/** Accepted readings as published: their messages as one JSON array, and the building of each. */
export interface PublishedBatch {
  /** The building of each message, in order. */
  buildingIds: readonly string[];
  /** `[m0,m1,…]`: each message a reading's browser view as JSON (a flat object), no whitespace between. */
  json: Buffer;
  /** Where each message starts in `json`. */
  starts: readonly number[];
}

export interface ReadingPublisher {
  publish(batch: PublishedBatch): Promise<void>;
}

/**
 * The batch of these messages, in order.
 *
 * @example
 * publishedBatch([{ buildingId: 'b1', message: '{"type":"peopleCount",…}' }]);
 * // { buildingIds: ['b1'], json: <[{"type":"peopleCount",…}]>, starts: [1] }
 */
export function publishedBatch(readings: ReadonlyArray<{ buildingId: string; message: string }>): PublishedBatch {
  const starts: number[] = [];
  let offset = 1;
  for (const { message } of readings) {
    starts.push(offset);
    offset += Buffer.byteLength(message) + 1;
  }
  return { buildingIds: readings.map((r) => r.buildingId), json: Buffer.from(`[${readings.map((r) => r.message).join(',')}]`), starts };
}

/** The messages of `batch` at `indexes` (ascending), as a batch of their own. */
export function selectedMessages(batch: PublishedBatch, indexes: readonly number[]): PublishedBatch {
  const parts: Buffer[] = [Buffer.from('[')];
  const starts: number[] = [];
  let offset = 1;
  indexes.forEach((index, k) => {
    const message = messageAt(batch, index);
    if (k > 0) parts.push(Buffer.from(','));
    offset += k > 0 ? 1 : 0;
    starts.push(offset);
    parts.push(message);
    offset += message.length;
  });
  parts.push(Buffer.from(']'));
  return { buildingIds: indexes.map((i) => batch.buildingIds[i]!), json: Buffer.concat(parts), starts };
}

/** The bytes of message `index`. */
function messageAt(batch: PublishedBatch, index: number): Buffer {
  const end = index + 1 < batch.starts.length ? batch.starts[index + 1]! - 1 : batch.json.length - 1;
  return batch.json.subarray(batch.starts[index]!, end);
}

export interface ChannelNames {
  /** Every accepted reading. Default `telemetry:raw`. */
  raw: string;
  /** Followed by the building id: the browser view. Default `telemetry:filtered:`. */
  filteredPrefix: string;
}

export const DEFAULT_CHANNELS: ChannelNames = { raw: 'telemetry:raw', filteredPrefix: 'telemetry:filtered:' };

export interface ClosablePublisher extends ReadingPublisher {
  /** Ends the publisher's own connection (after the publications in flight). */
  close(): void;
}

/** `*3\r\n$7\r\nPUBLISH\r\n$<n>\r\n<channel>\r\n$` for a channel: a message's length follows. */
function publishPrefix(channel: string): Buffer {
  const name = Buffer.from(channel);
  return Buffer.concat([Buffer.from(`*3\r\n$7\r\nPUBLISH\r\n$${name.length}\r\n`), name, Buffer.from('\r\n$')]);
}

/**
 * Publishes each message on the raw channel and on its building's filtered channel, in batch order,
 * as one pipeline of PUBLISH commands written in one go on a connection of the publisher's own
 * ({@link RespPipeline}, following `redis`): no script, no command object per message.
 */
export function createRedisPublisher(redis: Redis, channels: ChannelNames = DEFAULT_CHANNELS): ClosablePublisher {
  const pipeline = new RespPipeline(redis);
  const raw = publishPrefix(channels.raw);
  return {
    async publish({ buildingIds, json, starts }) {
      const filtered = new Map<string, Buffer>();
      let size = 0;
      for (let i = 0; i < starts.length; i++) {
        const buildingId = buildingIds[i]!;
        let prefix = filtered.get(buildingId);
        if (prefix === undefined) filtered.set(buildingId, (prefix = publishPrefix(`${channels.filteredPrefix}${buildingId}`)));
        const length = messageEnd(json, starts, i) - starts[i]!;
        // Each of the two commands: its prefix, the length's digits, CRLF, the message, CRLF.
        size += raw.length + prefix.length + 2 * (String(length).length + 4 + length);
      }
      const out = Buffer.allocUnsafe(size);
      let at = 0;
      for (let i = 0; i < starts.length; i++) {
        const start = starts[i]!;
        const end = messageEnd(json, starts, i);
        const digits = String(end - start);
        for (const prefix of [raw, filtered.get(buildingIds[i]!)!]) {
          at += prefix.copy(out, at);
          at += out.write(digits, at, 'latin1');
          out[at++] = 0x0d;
          out[at++] = 0x0a;
          at += json.copy(out, at, start, end);
          out[at++] = 0x0d;
          out[at++] = 0x0a;
        }
      }
      if (starts.length > 0) await pipeline.send(out.subarray(0, at), 2 * starts.length);
    },
    close() {
      pipeline.close();
    },
  };
}

/** Where message `index` ends in `json` (the comma after it, or the closing bracket). */
function messageEnd(json: Buffer, starts: readonly number[], index: number): number {
  return index + 1 < starts.length ? starts[index + 1]! - 1 : json.length - 1;
}
