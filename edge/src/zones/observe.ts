/**
 * The one place raw MACs become device ids: poll results in, a tracker observation out.
 */
import type { ApPollResult } from '../poll/types.js';
import type { DeviceHasher } from './device-key.js';
import type { PollObservation } from './types.js';

/**
 * Replaces every station's MAC by its keyed hash. Failed APs become silent observations.
 *
 * @example
 * observe(results, hasher); // { aps: [{ ap: 'ap-1', zone: 'lobby', answered: true, stations: [{ device: '3f…', rssiDbm: -61 }] }] }
 */
export function observe(results: readonly ApPollResult[], hasher: DeviceHasher): PollObservation {
  const aps = results.map((result) =>
    result.ok
      ? {
          ap: result.ap,
          zone: result.zone,
          answered: true as const,
          stations: result.stations.map((s) => ({ device: hasher.idOf(s.mac), rssiDbm: s.rssiDbm })),
        }
      : { ap: result.ap, zone: result.zone, answered: false as const },
  );
  hasher.sweep();
  return { aps };
}
