/**
 * The one place raw MACs become device ids: poll results in, a tracker observation out.
 */
import type { ApPollResult, StationSighting } from '../poll/types.js';
import type { DeviceHasher } from './device-key.js';
import type { ApObservation, DeviceSighting, PollObservation } from './types.js';

/**
 * Replaces every station's MAC by its keyed hash. Failed APs become silent observations.
 *
 * @example
 * observe(results, hasher); // { aps: [{ ap: 'ap-1', zone: 'lobby', answered: true, stations: [{ device: '3f…', rssiDbm: -61 }] }] }
 */
export function observe(results: readonly ApPollResult[], hasher: DeviceHasher): PollObservation {
  const aps: ApObservation[] = new Array<ApObservation>(results.length);
  for (let a = 0; a < results.length; a++) {
    const result = results[a] as ApPollResult;
    if (!result.ok) {
      aps[a] = { ap: result.ap, zone: result.zone, answered: false };
      continue;
    }
    const { stations } = result;
    const sightings: DeviceSighting[] = new Array<DeviceSighting>(stations.length);
    for (let i = 0; i < stations.length; i++) {
      const station = stations[i] as StationSighting;
      sightings[i] = { device: hasher.idOf(station.mac), rssiDbm: station.rssiDbm };
    }
    aps[a] = { ap: result.ap, zone: result.zone, answered: true, stations: sightings };
  }
  hasher.sweep();
  return { aps };
}
