/**
 * The world behind the simulated building, without the network: deterministic, moving, rebooting.
 */
import t from 'tap';
import { createWorld, LIVELY_MOTION, REALISTIC_MOTION, type World } from '../../../edge/src/simulate/world.js';

const options = { zones: ['a', 'b', 'c'], accessPoints: 6, devices: 40, seed: 42, rebootRate: 0.1 };

t.test('the same seed gives the same building', async (t) => {
  const one = createWorld(options);
  const two = createWorld(options);
  for (let i = 0; i < 50; i++) {
    one.step();
    two.step();
  }
  t.same(one.zoneCounts(), two.zoneCounts());
  t.same(one.sightings('ap-a-1'), two.sightings('ap-a-1'));
  t.notSame(createWorld({ ...options, seed: 43 }).sightings('ap-a-1'), createWorld(options).sightings('ap-a-1'));
});

t.test('devices walk between zones; every device is in exactly one zone', async (t) => {
  const world = createWorld(options);
  const first = world.deviceZones();
  let moved = 0;
  for (let i = 0; i < 120; i++) {
    world.step();
    const counts = world.zoneCounts();
    t.equal(Object.values(counts).reduce((a, b) => a + b, 0), 40);
  }
  for (const [mac, zone] of world.deviceZones()) if (first.get(mac) !== zone) moved++;
  t.ok(moved >= 10, `${moved} of 40 devices changed zone in 2 minutes`);
});

t.test('RSSI jitters from step to step, and in-zone APs are louder on average', async (t) => {
  const world = createWorld({ ...options, rebootRate: 0 });
  const readings: number[] = [];
  let inZone = 0;
  let outZone = 0;
  let inN = 0;
  let outN = 0;
  for (let i = 0; i < 30; i++) {
    world.step();
    const zones = world.deviceZones();
    for (const ap of world.accessPoints) {
      for (const s of world.sightings(ap.name)) {
        if (zones.get(s.mac) === ap.zone) {
          inZone += s.rssiDbm;
          inN++;
        } else {
          outZone += s.rssiDbm;
          outN++;
        }
      }
    }
    const some = world.sightings('ap-b-1')[0];
    if (some) readings.push(some.rssiDbm);
  }
  t.ok(new Set(readings).size > 5, 'readings vary');
  t.ok(inZone / inN > outZone / outN + 8, `in-zone ${(inZone / inN).toFixed(1)} dBm vs other zones ${(outZone / outN).toFixed(1)} dBm`);
  t.ok(world.sightings('ap-a-1').every((s) => s.rssiDbm >= -88 && s.rssiDbm <= -20 && Number.isInteger(s.rssiDbm)));
});

t.test('APs reboot now and then, go silent for a few steps, and come back', async (t) => {
  const world = createWorld(options);
  const silentRuns = new Map<string, number[]>();
  const current = new Map<string, number>();
  for (let i = 0; i < 300; i++) {
    world.step();
    for (const ap of world.accessPoints) {
      if (world.rebooting(ap.name)) {
        t.same(world.sightings(ap.name), [], 'a rebooting AP hears nothing');
        current.set(ap.name, (current.get(ap.name) ?? 0) + 1);
      } else if (current.has(ap.name)) {
        silentRuns.set(ap.name, [...(silentRuns.get(ap.name) ?? []), current.get(ap.name) as number]);
        current.delete(ap.name);
      }
    }
  }
  const runs = [...silentRuns.values()].flat();
  t.ok(runs.length >= 10, `${runs.length} reboots in 300 steps`);
  // 3 to 8 steps each (two back to back make a longer one)
  t.ok(runs.every((n) => n >= 3 && n <= 16), 'each lasts a few steps');
});

/** Devices whose true zone differs from their zone at the start, after each of `steps` steps. */
function zoneChanges(world: World, steps: number): number[] {
  const first = world.deviceZones();
  const changed: number[] = [];
  for (let i = 0; i < steps; i++) {
    world.step();
    let n = 0;
    for (const [mac, zone] of world.deviceZones()) if (first.get(mac) !== zone) n++;
    changed.push(n);
  }
  return changed;
}

t.test('realistic motion is the default: the same walk, step for step', async (t) => {
  const implicit = createWorld(options);
  const explicit = createWorld({ ...options, motion: REALISTIC_MOTION });
  t.same(zoneChanges(implicit, 60), zoneChanges(explicit, 60));
  t.same(implicit.sightings('ap-b-1'), explicit.sightings('ap-b-1'));
});

t.test('lively motion (the demo): people leave their zone within the first steps', async (t) => {
  const lively = zoneChanges(createWorld({ ...options, rebootRate: 0, motion: LIVELY_MOTION }), 10);
  const realistic = zoneChanges(createWorld({ ...options, rebootRate: 0 }), 10);
  t.ok(lively[4]! >= 4, `after 5 steps ${lively[4]} of 40 devices are in another zone`);
  t.ok(lively[9]! >= 12, `after 10 steps ${lively[9]} of 40`);
  t.ok(lively[9]! > realistic[9]!, `more than at the realistic pace (${realistic[9]})`);
});

t.test('impossible motion is refused', async (t) => {
  t.throws(() => createWorld({ ...options, motion: { ...LIVELY_MOTION, dwellSteps: [5, 2] } }), { message: /motion\.dwellSteps: expected \[min, max\] whole steps, got \[5, 2\]/ });
  t.throws(() => createWorld({ ...options, motion: { ...LIVELY_MOTION, initialDwellSteps: [0, 1.5] } }), { message: /motion\.initialDwellSteps/ });
  t.throws(() => createWorld({ ...options, motion: { ...LIVELY_MOTION, speedM: [0, 1] } }), { message: /motion\.speedM/ });
  t.throws(() => createWorld({ ...options, motion: { ...LIVELY_MOTION, leaveZone: 2 } }), { message: /motion\.leaveZone/ });
});

t.test('impossible layouts are refused', async (t) => {
  t.throws(() => createWorld({ ...options, zones: [] }), RangeError);
  t.throws(() => createWorld({ ...options, zones: ['a', 'a'] }), { message: 'zone names must be unique' });
  t.throws(() => createWorld({ ...options, accessPoints: 2 }), { message: /cannot cover 3 zones/ });
});
