/**
 * Publishes accepted readings on Redis: every reading on the raw channel, and the browser view (the
 * declared fields only) on the building's filtered channel. Channel names are options so tests and
 * deployments can keep theirs apart.
 *
 * A batch is published with one server-side script call carrying every (channel, message) pair: the
 * same PUBLISH per message as a pipeline, without a client-side command object per message, which
 * made publishing the costliest part of ingest.
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

/** PUBLISH ARGV[1] ARGV[2], ARGV[3] ARGV[4], …; answers how many messages were published. */
const PUBLISH_PAIRS = `for i = 1, #ARGV, 2 do redis.call('PUBLISH', ARGV[i], ARGV[i + 1]) end return #ARGV / 2`;

/** Pairs per script call, so one call never holds Redis for long. */
const PAIRS_PER_CALL = 1000;

type PublishingRedis = Redis & { telemetryPublishPairs(...args: string[]): Promise<number> };

export function createRedisPublisher(redis: Redis, channels: ChannelNames = DEFAULT_CHANNELS): ReadingPublisher {
  const client = redis as PublishingRedis;
  if (typeof client.telemetryPublishPairs !== 'function') {
    // EVALSHA with a fallback to EVAL: the script is sent once per connection.
    redis.defineCommand('telemetryPublishPairs', { numberOfKeys: 0, lua: PUBLISH_PAIRS });
  }
  return {
    async publish(readings) {
      const args: string[] = [];
      for (const { reading, metric } of readings) {
        // An accepted reading holds declared fields only (validation refuses any other), so the raw
        // message and the browser view carry the same JSON; it is serialised once.
        const view = JSON.stringify(declaredView(metric, reading));
        args.push(channels.raw, view, `${channels.filteredPrefix}${reading.buildingId}`, view);
      }
      for (let start = 0; start < args.length; start += PAIRS_PER_CALL * 2) {
        await client.telemetryPublishPairs(...args.slice(start, start + PAIRS_PER_CALL * 2));
      }
    },
  };
}
