/**
 * Publishes accepted readings on Redis: every reading on the raw channel, and the browser view (the
 * declared fields only) on the building's filtered channel. Channel names are options so tests and
 * deployments can keep theirs apart.
 *
 * A batch is published with one server-side script call per 500 readings. The messages go as ONE
 * script argument, the messages of the call as they stand in the batch's JSON array (without its
 * brackets), with the byte length of each, which the script cuts the argument by. (Not by searching
 * for where an element begins: a string value may itself end in `,{`, followed by its closing quote,
 * and a search would cut a reading there and send its tail on another building's channel.) Each
 * element is then PUBLISHed on the raw channel and on its building's filtered channel, in batch
 * order. A handful of arguments instead of four per reading keeps the client's encoding, its socket
 * writes and its garbage small; the argument is a slice of the batch's bytes, not a copy.
 */
import type { Redis, RedisOptions } from 'ioredis';

/** How long a publication waits for Redis's reply, and a connection for any byte while one waits. */
export const PUBLISH_TIMEOUT_MS = 2000;

/**
 * The options of the publisher's Redis client (main.ts creates it; it serves nothing else). A Redis
 * that stays connected but stops answering (a network that drops packets) must neither keep a
 * publication waiting, nor keep the bytes of the ones given up on:
 * - `commandTimeout` fails a call not answered within 2 s, so every publication ends and a stop's
 *   drain is bounded;
 * - `socketTimeout` closes a connection that sends nothing for 2 s while a call waits: ioredis keeps
 *   a timed-out call (and the slice of the request body it holds) until its reply comes or the
 *   connection closes, so without it they would pile up for as long as the connection stays open.
 *   The client connects again on its own;
 * - a call given up on is not sent again on the next connection (`autoResendUnfulfilledCommands`):
 *   it was counted as failed, and Redis may have run it already;
 * - without a connection a publication fails at once (`enableOfflineQueue: false`), never queued.
 */
export const PUBLISHING_REDIS_OPTIONS: RedisOptions = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  commandTimeout: PUBLISH_TIMEOUT_MS,
  socketTimeout: PUBLISH_TIMEOUT_MS,
  autoResendUnfulfilledCommands: false,
};

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

/**
 * ARGV[1] the raw channel; ARGV[2] the messages, JSON objects joined by commas; ARGV[3] each message's
 * length in bytes, space-separated, in order; ARGV[4] runs of `<count>:<channel index>`,
 * space-separated, naming each message's filtered channel in order; ARGV[5…] the filtered channels
 * (1-based indexes). Answers how many messages were published.
 */
const PUBLISH_MESSAGES = `
local raw, blob, n = ARGV[1], ARGV[2], 0
local sub, call, tonumber = string.sub, redis.call, tonumber
local lengths = string.gmatch(ARGV[3], '%d+')
local pos = 1
for count, channel in string.gmatch(ARGV[4], '(%d+):(%d+)') do
  local target = ARGV[4 + tonumber(channel)]
  for _ = 1, tonumber(count) do
    local stop = pos + tonumber(lengths()) - 1
    local message = sub(blob, pos, stop)
    call('PUBLISH', raw, message)
    call('PUBLISH', target, message)
    n = n + 1
    pos = stop + 2
  end
end
return n`;

/** Readings per script call, so one call never holds Redis for long (two PUBLISHes each). */
const READINGS_PER_CALL = 500;

type PublishingRedis = Redis & { telemetryPublishMessages(...args: Array<string | Buffer>): Promise<number> };

export function createRedisPublisher(redis: Redis, channels: ChannelNames = DEFAULT_CHANNELS): ReadingPublisher {
  const client = redis as PublishingRedis;
  if (typeof client.telemetryPublishMessages !== 'function') {
    // EVALSHA with a fallback to EVAL: the script is sent once per connection.
    redis.defineCommand('telemetryPublishMessages', { numberOfKeys: 0, lua: PUBLISH_MESSAGES });
  }
  return {
    async publish({ buildingIds, json, starts }) {
      for (let start = 0; start < starts.length; start += READINGS_PER_CALL) {
        const end = Math.min(starts.length, start + READINGS_PER_CALL);
        const filtered = new Map<string, number>();
        const runs: string[] = [];
        let runChannel = 0;
        let runLength = 0;
        for (let i = start; i < end; i++) {
          const buildingId = buildingIds[i]!;
          let channel = filtered.get(buildingId);
          if (channel === undefined) {
            channel = filtered.size + 1;
            filtered.set(buildingId, channel);
          }
          if (channel !== runChannel && runLength > 0) {
            runs.push(`${runLength}:${runChannel}`);
            runLength = 0;
          }
          runChannel = channel;
          runLength += 1;
        }
        runs.push(`${runLength}:${runChannel}`);
        const names = [...filtered.keys()].map((buildingId) => `${channels.filteredPrefix}${buildingId}`);
        // The messages of this call as they stand in the array, without a copy: up to the comma
        // before the next call's first message, or the closing bracket.
        const messages = json.subarray(starts[start]!, end < starts.length ? starts[end]! - 1 : json.length - 1);
        const lengths: number[] = [];
        for (let i = start; i < end; i++) lengths.push((i + 1 < starts.length ? starts[i + 1]! - 1 : json.length - 1) - starts[i]!);
        await client.telemetryPublishMessages(channels.raw, messages, lengths.join(' '), runs.join(' '), ...names);
      }
    },
  };
}
