/**
 * The simulated building's world, with no network in it: zones side by side along a corridor, APs in
 * them, devices that dwell and walk between zones, and what each AP hears of each device.
 *
 * Signal: log-distance path loss (`txDbmAt1m - 10·n·log10(d)`), a loss per wall between zones, a fixed
 * shadowing per device and AP (furniture, bodies), and Gaussian jitter per reading. A device is heard by
 * every AP it reaches above the sensitivity, so coverage overlaps; its own zone's AP is usually the
 * loudest, but near a wall the jitter sometimes says otherwise — as in a real building.
 */
import type { StationSighting } from '../poll/types.js';
import { createRandom, type Random } from './prng.js';

export interface RadioModel {
  /** Received power at 1 m, dBm. */
  txDbmAt1m: number;
  /** Indoor path-loss exponent (2 free space, 2.5–3.5 offices). */
  pathLossExponent: number;
  /** Loss per wall between two zones, dB. */
  wallLossDb: number;
  /** Reading-to-reading jitter (standard deviation), dB. */
  jitterSd: number;
  /** Fixed shadowing per device and AP (standard deviation), dB. */
  shadowSd: number;
  /** Weaker readings are not heard. */
  sensitivityDbm: number;
}

export const DEFAULT_RADIO: RadioModel = {
  txDbmAt1m: -38,
  pathLossExponent: 2.8,
  wallLossDb: 5,
  jitterSd: 4,
  shadowSd: 2,
  sensitivityDbm: -88,
};

/** How people move: they stand a while, then walk somewhere, often to another zone. Steps are ticks. */
export interface MotionModel {
  /** Steps each device stands still before its first walk, [min, max]. */
  initialDwellSteps: readonly [number, number];
  /** Steps a device stands still after arriving, [min, max]. */
  dwellSteps: readonly [number, number];
  /** Walking speed, metres per step, [min, max]. */
  speedM: readonly [number, number];
  /** Probability that the next walk leads to another zone (else a spot in the same zone). */
  leaveZone: number;
  /**
   * Whether each device heads for its first destination once its initial dwell is over; otherwise it
   * first stands a whole dwell (`dwellSteps`) where it appeared, as people found sitting down.
   */
  walkAtStart: boolean;
}

/** Office life at one step per second: people stay 5–40 s, then walk at 0.9–1.4 m/s. */
export const REALISTIC_MOTION: MotionModel = {
  initialDwellSteps: [0, 20],
  dwellSteps: [5, 40],
  speedM: [0.9, 1.4],
  leaveZone: 0.6,
  walkAtStart: false,
};

/**
 * A busier building for a live demo: everyone starts walking within a few steps, stays 3–10 steps and
 * mostly heads for another zone, so zone changes show within seconds of starting.
 */
export const LIVELY_MOTION: MotionModel = {
  initialDwellSteps: [0, 2],
  dwellSteps: [3, 10],
  speedM: [1.2, 1.8],
  leaveZone: 0.85,
  walkAtStart: true,
};

/** Zone size, metres: zones are side by side along x. */
export const ZONE_WIDTH_M = 15;
export const ZONE_DEPTH_M = 12;

export interface WorldOptions {
  zones: readonly string[];
  accessPoints: number;
  devices: number;
  seed: number;
  /** Probability, per step, that one more AP starts a reboot. */
  rebootRate: number;
  radio?: Partial<RadioModel>;
  /** Default {@link REALISTIC_MOTION}. */
  motion?: MotionModel;
}

export interface WorldAp {
  name: string;
  zone: string;
  /** The AP's own (radio) MAC: what controllers report as the AP identity or BSSID. */
  mac: string;
  x: number;
  y: number;
}

interface Device {
  mac: string;
  x: number;
  y: number;
  targetX: number;
  targetY: number;
  /** Steps left standing still. */
  dwell: number;
  /** Metres per step. */
  speed: number;
  /** Fixed shadowing towards each AP, dB. */
  shadow: number[];
}

export interface World {
  readonly zones: readonly string[];
  readonly accessPoints: readonly WorldAp[];
  /** Devices move, readings are re-sampled, reboots start and end. */
  step(): void;
  /** What an AP hears now (empty while it reboots). */
  sightings(apName: string): StationSighting[];
  rebooting(apName: string): boolean;
  /** Makes an AP go silent for `steps` steps from now. */
  reboot(apName: string, steps: number): void;
  /** True zone of every device. */
  deviceZones(): Map<string, string>;
  /** Devices per zone, every zone listed. */
  zoneCounts(): Record<string, number>;
}

/** A random locally administered unicast MAC, like the randomised MACs phones use. */
function randomMac(random: Random): string {
  const octets = Array.from({ length: 6 }, () => random.int(0, 255));
  octets[0] = ((octets[0] ?? 0) & 0xfc) | 0x02;
  return octets.map((o) => o.toString(16).padStart(2, '0')).join(':');
}

function zoneIndexAt(x: number, zoneCount: number): number {
  return Math.min(zoneCount - 1, Math.max(0, Math.floor(x / ZONE_WIDTH_M)));
}

/**
 * Builds a world. APs are spread over the zones in turn (AP i in zone i mod zones) and placed evenly
 * inside their zone; devices start at random points.
 */
export function createWorld(options: WorldOptions): World {
  if (options.zones.length === 0) throw new RangeError('a simulated building needs at least one zone');
  if (new Set(options.zones).size !== options.zones.length) throw new RangeError('zone names must be unique');
  if (options.accessPoints < options.zones.length) {
    throw new RangeError(`${options.accessPoints} access points cannot cover ${options.zones.length} zones (one per zone at least)`);
  }
  if (!Number.isInteger(options.devices) || options.devices < 0) throw new RangeError('devices must be a non-negative integer');
  const radio = { ...DEFAULT_RADIO, ...options.radio };
  const motion = options.motion ?? REALISTIC_MOTION;
  for (const [name, [min, max]] of [
    ['initialDwellSteps', motion.initialDwellSteps],
    ['dwellSteps', motion.dwellSteps],
  ] as const) {
    if (!Number.isInteger(min) || !Number.isInteger(max) || min < 0 || max < min) throw new RangeError(`motion.${name}: expected [min, max] whole steps, got [${min}, ${max}]`);
  }
  if (!(motion.speedM[0] > 0 && motion.speedM[1] >= motion.speedM[0])) throw new RangeError('motion.speedM: expected [min, max] metres per step above 0');
  if (!(motion.leaveZone >= 0 && motion.leaveZone <= 1)) throw new RangeError('motion.leaveZone: expected a probability');
  const random = createRandom(options.seed);
  const zones = [...options.zones];

  const perZone = zones.map((_, z) => Array.from({ length: options.accessPoints }, (_, i) => i).filter((i) => i % zones.length === z).length);
  const placed = zones.map(() => 0);
  const accessPoints: WorldAp[] = Array.from({ length: options.accessPoints }, (_, i) => {
    const z = i % zones.length;
    const n = perZone[z] ?? 1;
    const k = placed[z] ?? 0;
    placed[z] = k + 1;
    return {
      name: `ap-${zones[z]}-${k + 1}`,
      zone: zones[z] as string,
      mac: randomMac(random),
      x: z * ZONE_WIDTH_M + (ZONE_WIDTH_M * (k + 1)) / (n + 1),
      y: k % 2 === 0 ? ZONE_DEPTH_M * 0.35 : ZONE_DEPTH_M * 0.65,
    };
  });
  const apIndex = new Map(accessPoints.map((ap, i) => [ap.name, i]));
  const silentSteps = accessPoints.map(() => 0);

  const randomPointIn = (z: number) => ({
    x: z * ZONE_WIDTH_M + random.between(0.5, ZONE_WIDTH_M - 0.5),
    y: random.between(0.5, ZONE_DEPTH_M - 0.5),
  });
  /** Where a device standing at `x` walks next: usually another zone, sometimes a spot in its own. */
  const destinationFrom = (x: number) => {
    const here = zoneIndexAt(x, zones.length);
    const there = zones.length > 1 && random.next() < motion.leaveZone ? (here + random.int(1, zones.length - 1)) % zones.length : here;
    return randomPointIn(there);
  };
  const devices: Device[] = Array.from({ length: options.devices }, () => {
    const start = randomPointIn(random.int(0, zones.length - 1));
    const target = motion.walkAtStart ? destinationFrom(start.x) : start;
    return {
      mac: randomMac(random),
      x: start.x,
      y: start.y,
      targetX: target.x,
      targetY: target.y,
      dwell: random.int(...motion.initialDwellSteps),
      speed: random.between(...motion.speedM),
      shadow: accessPoints.map(() => random.gaussian(0, radio.shadowSd)),
    };
  });

  let heard = new Map<string, StationSighting[]>();

  function move(device: Device): void {
    if (device.dwell > 0) {
      device.dwell--;
      // people fidget: a phone in a pocket moves a little while its owner stands
      device.x += random.gaussian(0, 0.15);
      device.y = Math.min(ZONE_DEPTH_M - 0.2, Math.max(0.2, device.y + random.gaussian(0, 0.15)));
      device.x = Math.min(zones.length * ZONE_WIDTH_M - 0.2, Math.max(0.2, device.x));
      return;
    }
    const dx = device.targetX - device.x;
    const dy = device.targetY - device.y;
    const distance = Math.hypot(dx, dy);
    if (distance <= device.speed) {
      device.x = device.targetX;
      device.y = device.targetY;
      device.dwell = random.int(...motion.dwellSteps);
      const target = destinationFrom(device.x);
      device.targetX = target.x;
      device.targetY = target.y;
      return;
    }
    device.x += (dx / distance) * device.speed;
    device.y += (dy / distance) * device.speed;
  }

  function sample(): void {
    const next = new Map<string, StationSighting[]>(accessPoints.map((ap) => [ap.name, []]));
    accessPoints.forEach((ap, a) => {
      if ((silentSteps[a] ?? 0) > 0) return;
      const apZone = zoneIndexAt(ap.x, zones.length);
      const list = next.get(ap.name) as StationSighting[];
      for (const device of devices) {
        const distance = Math.max(1, Math.hypot(device.x - ap.x, device.y - ap.y));
        const walls = Math.abs(zoneIndexAt(device.x, zones.length) - apZone);
        const rssi =
          radio.txDbmAt1m -
          10 * radio.pathLossExponent * Math.log10(distance) -
          walls * radio.wallLossDb +
          (device.shadow[a] ?? 0) +
          random.gaussian(0, radio.jitterSd);
        if (rssi >= radio.sensitivityDbm) list.push({ mac: device.mac, rssiDbm: Math.min(-20, Math.round(rssi)) });
      }
    });
    heard = next;
  }

  sample();

  return {
    zones,
    accessPoints,
    step() {
      silentSteps.forEach((left, a) => {
        if (left > 0) silentSteps[a] = left - 1;
      });
      if (random.next() < options.rebootRate) {
        const candidates = accessPoints.filter((_, a) => silentSteps[a] === 0);
        if (candidates.length > 0) silentSteps[apIndex.get(random.pick(candidates).name) as number] = random.int(3, 8);
      }
      for (const device of devices) move(device);
      sample();
    },
    sightings(apName) {
      return [...(heard.get(apName) ?? [])];
    },
    rebooting(apName) {
      const a = apIndex.get(apName);
      return a !== undefined && (silentSteps[a] ?? 0) > 0;
    },
    reboot(apName, steps) {
      const a = apIndex.get(apName);
      if (a === undefined) throw new RangeError(`no access point named ${apName}`);
      silentSteps[a] = Math.max(silentSteps[a] ?? 0, steps);
      heard.set(apName, []);
    },
    deviceZones() {
      return new Map(devices.map((device) => [device.mac, zones[zoneIndexAt(device.x, zones.length)] as string]));
    },
    zoneCounts() {
      const counts: Record<string, number> = Object.fromEntries(zones.map((zone) => [zone, 0]));
      for (const device of devices) {
        const zone = zones[zoneIndexAt(device.x, zones.length)] as string;
        counts[zone] = (counts[zone] ?? 0) + 1;
      }
      return counts;
    },
  };
}
