/**
 * Tracker time for 10k stations: 10,000 devices, each heard by 2 of 100 APs (20,000 sightings per poll),
 * RSSI jittering every poll and 1% of devices changing AP per poll.
 *
 * It measures the steady state a gateway lives in: the first poll fills an empty tracker, then warm-up
 * polls let the JIT settle and the state reach its working size, then every measured poll is timed
 * alone. Each poll's input is built before its clock starts, as the poller hands it over: a new MAC
 * string per AP row every tick (made by the poller's own macFromOctets, as from an SNMP OID index) and
 * the AP and zone names of the config (the same strings every tick). p50 and p95 over the measured polls are reported; p95 shows the garbage-collection tail.
 *
 * Timed per poll:
 * - observe: MACs to keyed device ids (the hasher and its cache);
 * - applyPoll: the pure state machine;
 * - tick: observe + applyPoll + zoneCounts + transitionWindow, the tracker's whole share of a daemon tick
 *   (everything but the SQLite write and the post), in wall time and in CPU time (on a shared, loaded
 *   machine the wall time also holds the time other processes had the core).
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { macFromOctets } from '../../../edge/src/poll/mac.js';
import type { ApPollResult } from '../../../edge/src/poll/types.js';
import { createRandom } from '../../../edge/src/simulate/prng.js';
import { createDeviceHasher } from '../../../edge/src/zones/device-key.js';
import { observe } from '../../../edge/src/zones/observe.js';
import { applyPoll, emptyTrackerState, transitionWindow, zoneCounts } from '../../../edge/src/zones/tracker.js';
import { DEFAULT_TRACKER_CONFIG } from '../../../edge/src/zones/types.js';
import { nearestRank } from '../report.js';

const DEVICES = 10_000;
const APS = 100;
const ZONES = 10;
const WARM_UP_POLLS = 15;
const MEASURED_POLLS = 60;

export interface Percentiles {
  p50: number;
  p95: number;
}

export interface TrackerFigures {
  observe: Percentiles;
  apply: Percentiles;
  tick: Percentiles;
  /** CPU time (user + system, all threads, so garbage collection helpers too) of the whole tick. */
  tickCpu: Percentiles;
  polls: number;
}

function percentiles(values: readonly number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: nearestRank(sorted, 0.5), p95: nearestRank(sorted, 0.95) };
}

/** p50 and p95 ms per poll of the tracker's steps over 10k devices. */
export function benchTracker(): TrackerFigures {
  const random = createRandom(7);
  const apNames = Array.from({ length: APS }, (_, a) => `ap-${a}`);
  const apZones = Array.from({ length: APS }, (_, a) => `zone-${Math.floor(a / (APS / ZONES))}`);
  const zoneIds = Array.from({ length: ZONES }, (_, z) => `zone-${z}`);
  const home = Array.from({ length: DEVICES }, () => random.int(0, APS - 1));

  /** One poll's results, built before the clock starts so only the tracker is timed. */
  const nextPoll = (): ApPollResult[] => {
    for (let d = 0; d < DEVICES; d++) if (random.next() < 0.01) home[d] = random.int(0, APS - 1);
    const stations = Array.from({ length: APS }, () => [] as Array<{ mac: string; rssiDbm: number }>);
    const octets = [2, 0x5e, 0x10, 0, 0, 0];
    for (let d = 0; d < DEVICES; d++) {
      const a = home[d] as number;
      octets[3] = (d >> 16) & 255;
      octets[4] = (d >> 8) & 255;
      octets[5] = d & 255;
      // as the poller makes them: a new string per AP row, from the OID index
      stations[a]?.push({ mac: macFromOctets(octets) as string, rssiDbm: Math.round(random.gaussian(-55, 4)) });
      stations[(a + 1) % APS]?.push({ mac: macFromOctets(octets) as string, rssiDbm: Math.round(random.gaussian(-70, 4)) });
    }
    return stations.map((list, a) => ({ ap: apNames[a] as string, zone: apZones[a] as string, ok: true as const, stations: list, durationMs: 1 }));
  };

  const config = DEFAULT_TRACKER_CONFIG;
  const hasher = createDeviceHasher(randomBytes(32));
  let state = emptyTrackerState();
  const observeTimes: number[] = [];
  const applyTimes: number[] = [];
  const tickTimes: number[] = [];
  const tickCpuTimes: number[] = [];
  for (let i = 0; i < 1 + WARM_UP_POLLS + MEASURED_POLLS; i++) {
    const results = nextPoll();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const observation = observe(results, hasher);
    const t1 = performance.now();
    state = applyPoll(state, observation, config).state;
    const t2 = performance.now();
    zoneCounts(state, zoneIds);
    transitionWindow(state, config);
    const t3 = performance.now();
    const cpu = process.cpuUsage(cpu0);
    if (i > WARM_UP_POLLS) {
      observeTimes.push(t1 - t0);
      applyTimes.push(t2 - t1);
      tickTimes.push(t3 - t0);
      tickCpuTimes.push((cpu.user + cpu.system) / 1000);
    }
  }
  if (state.devices.size !== DEVICES) throw new Error(`the tracker holds ${state.devices.size} devices, expected ${DEVICES}`);
  return { observe: percentiles(observeTimes), apply: percentiles(applyTimes), tick: percentiles(tickTimes), tickCpu: percentiles(tickCpuTimes), polls: MEASURED_POLLS };
}
