/**
 * Publishes accepted readings on Redis: every reading on the raw channel, and the browser view (the
 * declared fields only) on the building's filtered channel. Channel names are options so tests and
 * deployments can keep theirs apart.
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

/** One pipeline per batch: two PUBLISH per reading, one round trip. */
export function createRedisPublisher(redis: Redis, channels: ChannelNames = DEFAULT_CHANNELS): ReadingPublisher {
  return {
    async publish(readings) {
      if (readings.length === 0) return;
      const pipeline = redis.pipeline();
      for (const { reading, metric } of readings) {
        pipeline.publish(channels.raw, JSON.stringify(reading));
        pipeline.publish(`${channels.filteredPrefix}${reading.buildingId}`, JSON.stringify(declaredView(metric, reading)));
      }
      const results = (await pipeline.exec()) ?? [];
      const failed = results.find(([err]) => err);
      if (failed?.[0]) throw failed[0];
    },
  };
}
