/**
 * Publishes accepted readings on Redis: every reading on the raw channel, and the browser view (the
 * declared fields only) on the building's filtered channel. Channel names are options so tests and
 * deployments can keep theirs apart.
 *
 * A batch is published with one server-side script call per 500 readings: the messages go as one
 * concatenated string with their byte lengths, and the script cuts them apart and runs the same two
 * PUBLISHes per reading, in batch order. Sending a handful of arguments instead of four per reading
 * keeps the client's command encoding and socket writes small, which made publishing the costliest
 * part of ingest.
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
 * ARGV[1] the raw channel; ARGV[2] every message, concatenated; ARGV[3] `<bytes>:<channel index>` per
 * message, space-separated; ARGV[4…] the filtered channels the indexes name (1-based). Each message
 * is published on the raw channel, then on its filtered channel. Answers how many readings were sent.
 */
const PUBLISH_MESSAGES = `
local raw, blob, pos, n = ARGV[1], ARGV[2], 1, 0
for len, channel in string.gmatch(ARGV[3], '(%d+):(%d+)') do
  len = tonumber(len)
  local message = string.sub(blob, pos, pos + len - 1)
  pos = pos + len
  redis.call('PUBLISH', raw, message)
  redis.call('PUBLISH', ARGV[3 + tonumber(channel)], message)
  n = n + 1
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
        const views: string[] = [];
        const index: string[] = [];
        for (let i = start; i < end; i++) {
          const { reading, metric } = readings[i]!;
          // An accepted reading holds declared fields only (validation refuses any other), so the raw
          // message and the browser view carry the same JSON; it is serialised once.
          const view = JSON.stringify(declaredView(metric, reading));
          let channel = filtered.get(reading.buildingId);
          if (channel === undefined) {
            channel = filtered.size + 1;
            filtered.set(reading.buildingId, channel);
          }
          views.push(view);
          index.push(`${Buffer.byteLength(view)}:${channel}`);
        }
        const names = [...filtered.keys()].map((buildingId) => `${channels.filteredPrefix}${buildingId}`);
        await client.telemetryPublishMessages(channels.raw, views.join(''), index.join(' '), ...names);
      }
    },
  };
}
