/**
 * Publishes accepted readings on Redis: every reading on the raw channel, and the browser view (the
 * declared fields only) on the building's filtered channel. Channel names are options so tests and
 * deployments can keep theirs apart.
 *
 * A batch is published with one server-side script call per 500 readings. The messages go as ONE
 * JSON array, serialised in one call, which the script cuts into its elements: each element is a flat
 * object (a validated reading's declared fields: strings and numbers), and inside a JSON string every
 * `"` is escaped as `\"`, so the two characters `{"` occur in the array exactly where an element
 * begins. Each element is then PUBLISHed on the raw channel and on its building's filtered channel, in
 * batch order. A handful of arguments instead of four per reading keeps the client's encoding, its
 * socket writes and its garbage small, which made publishing the costliest part of ingest.
 */
import type { Redis } from 'ioredis';
import { declaredView } from '../../../shared/catalog/validate.js';
import type { ValidReading } from '../domain/batch.js';

export interface ReadingPublisher {
  publish(readings: readonly ValidReading[]): Promise<void>;
}

export interface ChannelNames {
  /** Every accepted reading. Default `telemetry:raw`. */
  raw: string;
  /** Followed by the building id: the browser view. Default `telemetry:filtered:`. */
  filteredPrefix: string;
}

export const DEFAULT_CHANNELS: ChannelNames = { raw: 'telemetry:raw', filteredPrefix: 'telemetry:filtered:' };

/**
 * ARGV[1] the raw channel; ARGV[2] the messages as one JSON array of flat objects; ARGV[3] runs of
 * `<count>:<channel index>`, space-separated, naming each message's filtered channel in order;
 * ARGV[4…] the filtered channels (1-based indexes). Answers how many messages were published.
 */
const PUBLISH_MESSAGES = `
local raw, blob, n = ARGV[1], ARGV[2], 0
local pos = 2
for count, channel in string.gmatch(ARGV[3], '(%d+):(%d+)') do
  local target = ARGV[3 + tonumber(channel)]
  for _ = 1, tonumber(count) do
    local comma = string.find(blob, ',{"', pos, true)
    local stop = comma and comma - 1 or #blob - 1
    local message = string.sub(blob, pos, stop)
    redis.call('PUBLISH', raw, message)
    redis.call('PUBLISH', target, message)
    n = n + 1
    pos = stop + 2
  end
end
return n`;

/** Readings per script call, so one call never holds Redis for long (two PUBLISHes each). */
const READINGS_PER_CALL = 500;

type PublishingRedis = Redis & { telemetryPublishMessages(...args: string[]): Promise<number> };

export function createRedisPublisher(redis: Redis, channels: ChannelNames = DEFAULT_CHANNELS): ReadingPublisher {
  const client = redis as PublishingRedis;
  if (typeof client.telemetryPublishMessages !== 'function') {
    // EVALSHA with a fallback to EVAL: the script is sent once per connection.
    redis.defineCommand('telemetryPublishMessages', { numberOfKeys: 0, lua: PUBLISH_MESSAGES });
  }
  return {
    async publish(readings) {
      for (let start = 0; start < readings.length; start += READINGS_PER_CALL) {
        const end = Math.min(readings.length, start + READINGS_PER_CALL);
        const filtered = new Map<string, number>();
        const views: Array<Record<string, unknown>> = [];
        const runs: string[] = [];
        let runChannel = 0;
        let runLength = 0;
        for (let i = start; i < end; i++) {
          const { reading, metric } = readings[i]!;
          // An accepted reading holds declared fields only (validation refuses any other), so the raw
          // message and the browser view carry the same JSON.
          views.push(declaredView(metric, reading));
          let channel = filtered.get(reading.buildingId);
          if (channel === undefined) {
            channel = filtered.size + 1;
            filtered.set(reading.buildingId, channel);
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
        await client.telemetryPublishMessages(channels.raw, JSON.stringify(views), runs.join(' '), ...names);
      }
    },
  };
}
