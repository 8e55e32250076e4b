/**
 * Tracker time for 10k stations: 10,000 devices, each heard by 2 of 100 APs (20,000 sightings), RSSI
 * jittering every poll and 1% of devices changing AP. Measured after the state holds all 10k devices.
 * The tracker (edge/src/zones) belongs to another part of the tree; it is loaded when present, and the
 * benchmark says n/a otherwise.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { ApPollResult } from '../../../edge/src/poll/types.js';
import { createRandom } from '../../../edge/src/simulate/prng.js';

/** What the benchmark uses of edge/src/zones (checked at run time, so a missing module is not fatal). */
interface ZonesModule {
  applyPoll(state: unknown, observation: unknown, config: unknown): { state: unknown };
  emptyTrackerState(): unknown;
  observe(results: readonly ApPollResult[], hasher: unknown): unknown;
  createDeviceHasher(key: Buffer): unknown;
  DEFAULT_TRACKER_CONFIG: unknown;
}

const DEVICES = 10_000;
const APS = 100;
const POLLS = 21;

function isZonesModule(value: unknown): value is ZonesModule {
  const m = value as Partial<Record<keyof ZonesModule, unknown>>;
  return (
    typeof m?.applyPoll === 'function' &&
    typeof m.emptyTrackerState === 'function' &&
    typeof m.observe === 'function' &&
    typeof m.createDeviceHasher === 'function' &&
    m.DEFAULT_TRACKER_CONFIG !== undefined
  );
}

async function loadZones(): Promise<ZonesModule | undefined> {
  try {
    const module: unknown = await import(new URL('../../../edge/src/zones/index.js', import.meta.url).href);
    return isZonesModule(module) ? module : undefined;
  } catch {
    return undefined;
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

/** Median ms per poll for observe (MAC → keyed id) and applyPoll; undefined when there is no tracker. */
export async function benchTracker(): Promise<{ observeMs: number; applyMs: number } | undefined> {
  const zones = await loadZones();
  if (!zones) return undefined;
  const random = createRandom(7);
  const macs = Array.from({ length: DEVICES }, (_, i) =>
    [2, (i >> 16) & 255, (i >> 8) & 255, i & 255, 0x5e, 0x10].map((o) => o.toString(16).padStart(2, '0')).join(':'),
  );
  const home = macs.map(() => random.int(0, APS - 1));

  /** One poll's results, built before the clock starts so only the tracker is timed. */
  const nextPoll = (): ApPollResult[] => {
    for (let d = 0; d < DEVICES; d++) if (random.next() < 0.01) home[d] = random.int(0, APS - 1);
    const stations = Array.from({ length: APS }, () => [] as Array<{ mac: string; rssiDbm: number }>);
    macs.forEach((mac, d) => {
      const a = home[d] as number;
      stations[a]?.push({ mac, rssiDbm: Math.round(random.gaussian(-55, 4)) });
      stations[(a + 1) % APS]?.push({ mac, rssiDbm: Math.round(random.gaussian(-70, 4)) });
    });
    return stations.map((list, a) => ({ ap: `ap-${a}`, zone: `zone-${Math.floor(a / 10)}`, ok: true as const, stations: list, durationMs: 1 }));
  };

  const hasher = zones.createDeviceHasher(randomBytes(32));
  let state = zones.emptyTrackerState();
  const observeTimes: number[] = [];
  const applyTimes: number[] = [];
  for (let i = 0; i < POLLS; i++) {
    const results = nextPoll();
    const t0 = performance.now();
    const observation = zones.observe(results, hasher);
    const t1 = performance.now();
    state = zones.applyPoll(state, observation, zones.DEFAULT_TRACKER_CONFIG).state;
    const t2 = performance.now();
    // the first poll fills an empty tracker; the steady state is what a gateway lives in
    if (i > 0) {
      observeTimes.push(t1 - t0);
      applyTimes.push(t2 - t1);
    }
  }
  return { observeMs: median(observeTimes), applyMs: median(applyTimes) };
}
