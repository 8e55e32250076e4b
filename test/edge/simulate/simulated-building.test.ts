/**
 * The simulated building, polled by the real poller over its real SNMP agents and SSH servers.
 */
import t from 'tap';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadDialects } from '../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
import type { ApPollResult } from '../../../edge/src/poll/types.js';
import { CREDENTIAL_FILES, startSimulatedBuilding } from '../../../edge/src/simulate/building.js';
import type { SimulatedBuilding, SimulationOptions } from '../../../edge/src/simulate/types.js';

const dialects = loadDialects();

/** The zone of the loudest AP for every MAC heard: what the tracker will do, in one line. */
function loudestZones(results: ApPollResult[]): Map<string, string> {
  const best = new Map<string, { zone: string; rssi: number }>();
  for (const result of results) {
    if (!result.ok) continue;
    for (const { mac, rssiDbm } of result.stations) {
      const seen = best.get(mac);
      if (!seen || rssiDbm > seen.rssi) best.set(mac, { zone: result.zone, rssi: rssiDbm });
    }
  }
  return new Map([...best].map(([mac, { zone }]) => [mac, zone]));
}

async function withBuilding(t: { teardown(fn: () => Promise<void>): void }, options: Omit<SimulationOptions, 'workDir'>): Promise<SimulatedBuilding> {
  const workDir = mkdtempSync(join(tmpdir(), 'lintel-sim-'));
  const building = await startSimulatedBuilding({ ...options, workDir });
  t.teardown(async () => {
    await building.stop();
    rmSync(workDir, { recursive: true, force: true });
  });
  return building;
}

t.test('every dialect answers; the loudest AP is in the true zone for most devices', async (t) => {
  const building = await withBuilding(t, { accessPoints: 7, devices: 40, seed: 11, rebootRate: 0 });
  t.same(
    building.accessPoints.map((ap) => ap.dialect).sort(),
    ['aruba-aos', 'cisco-wlc', 'mikrotik', 'openwrt-iw', 'openwrt-ubus', 'ruckus-zd', 'unifi'],
    'the default mix covers every shipped dialect',
  );
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());

  let agreeing = 0;
  let total = 0;
  for (let i = 0; i < 5; i++) {
    for (let s = 0; s < 10; s++) building.step();
    await building.ready();
    const results = await poller.pollAll(building.accessPoints, 10_000);
    t.same(results.filter((r) => !r.ok), [], `tick ${i}: every AP answered`);
    t.equal(results.length, 7, 'one result per physical AP, controllers expanded');
    const truth = building.deviceZones();
    const zones = loudestZones(results);
    t.equal(zones.size, 40, 'every device is heard by some AP');
    const counts = building.groundTruth().zoneCounts;
    t.equal(Object.values(counts).reduce((a, b) => a + b, 0), 40, 'ground truth counts every device once');
    for (const [mac, zone] of truth) {
      total++;
      if (zones.get(mac) === zone) agreeing++;
    }
    // overlap: a device is heard by several APs, with different signals
    const heardBy = results.filter((r) => r.ok && r.stations.length > 0).length;
    t.ok(heardBy >= 3, 'coverage overlaps');
  }
  t.ok(agreeing / total >= 0.8, `loudest-AP zone matches the truth for ${agreeing}/${total} sightings`);
});

t.test('a rebooting AP answers nothing, then comes back on the same port; a controller reports its rebooting AP down', async (t) => {
  // two APs behind each controller, so one can reboot while the other serves
  const building = await withBuilding(t, {
    accessPoints: 8,
    devices: 20,
    seed: 5,
    rebootRate: 0,
    dialects: ['openwrt-iw', 'aruba-aos', 'cisco-wlc', 'ruckus-zd'],
  });
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const ssh = building.accessPoints.find((ap) => ap.target.transport === 'ssh');
  const snmp = building.accessPoints.find((ap) => ap.target.transport === 'snmp' && !ap.apZones);
  const cisco = building.accessPoints.find((ap) => ap.dialect === 'cisco-wlc');
  const ruckus = building.accessPoints.find((ap) => ap.dialect === 'ruckus-zd');
  if (!ssh || !snmp || !cisco?.apZones || !ruckus?.apZones) throw new Error('the mix has SSH, SNMP and both controller dialects');
  const [ciscoDown, ciscoUp] = Object.keys(cisco.apZones) as [string, string];
  const [ruckusDown, ruckusUp] = Object.keys(ruckus.apZones) as [string, string];
  t.same([ciscoDown, ciscoUp].map((name) => /^ap-/.test(name)), [true, true], 'cisco-wlc names its APs');
  t.same([ruckusDown, ruckusUp].map((name) => /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/.test(name)), [true, true], 'ruckus-zd keys its APs by MAC');

  const before = await poller.pollAll(building.accessPoints, 10_000);
  t.same(before.filter((r) => !r.ok), [], 'every AP answers before the reboots');

  building.reboot(ssh.name, 3);
  building.reboot(snmp.name, 3);
  building.reboot(ciscoDown, 3);
  building.reboot(ruckusDown, 3);
  t.same(building.rebooting().sort(), [ssh.name, snmp.name, ciscoDown, ruckusDown].sort());
  await building.ready();
  const during = await poller.pollAll(building.accessPoints, 5000);
  const byName = new Map(during.map((r) => [r.ap, r]));
  t.match(byName.get(ssh.name), { ok: false, reason: 'unreachable' }, 'SSH: connection refused');
  t.match(byName.get(snmp.name), { ok: false, reason: 'timeout' }, 'SNMP: silence');
  t.match(
    byName.get(ciscoDown),
    { ok: false, reason: 'ap_down', error: /bsnAPOperationStatus is 3 \(downloading\)/ },
    'behind a Cisco WLC: the controller lists the AP as downloading, so its devices are frozen',
  );
  t.match(
    byName.get(ruckusDown),
    { ok: false, reason: 'ap_down', error: /ruckusZDWLANAPStatus is 0 \(disconnected\)/ },
    'behind a ZoneDirector: the controller lists the AP as disconnected',
  );
  for (const name of [ciscoUp, ruckusUp]) {
    const result = byName.get(name);
    t.ok(result?.ok && result.stations.length > 0, `${name}, behind the same controller, still gives its stations`);
  }
  t.equal(during.filter((r) => r.ok).length, during.length - 4, 'the other APs answered in the same tick');

  for (let i = 0; i < 3; i++) building.step();
  await building.ready();
  t.same(building.rebooting(), []);
  const after = await poller.pollAll(building.accessPoints, 10_000);
  t.same(after.filter((r) => !r.ok), [], 'all back, same targets; every AP behind a controller is up again');
  t.equal(after.length, 8, 'one result per physical AP');
  t.ok(after.every((r) => r.ok && r.stations.length > 0), 'every AP hears stations again');
});

t.test('the endpoints hold their credentials: wrong key or community gets nothing', async (t) => {
  const building = await withBuilding(t, { accessPoints: 2, zones: ['a', 'b'], devices: 5, seed: 2, rebootRate: 0, dialects: ['unifi', 'mikrotik'] });
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const [ssh, snmp] = building.accessPoints;
  if (ssh?.target.transport !== 'ssh' || snmp?.target.transport !== 'snmp') throw new Error('unexpected layout');
  t.equal(snmp.target.version, '3', 'the first SNMP endpoint speaks SNMPv3 authPriv');
  const results = await poller.pollAll(
    [
      { ...ssh, target: { ...ssh.target, hostKeySha256: 'AAAA' } },
      { ...snmp, target: { ...snmp.target, authKey: 'wrong-auth-key' } },
      ssh,
      snmp,
    ],
    800,
  );
  // net-snmp's agent drops a request with a bad digest (snmpd reports it): either way nothing is read
  t.match(results, [{ ok: false, reason: 'auth' }, { ok: false, reason: /^(auth|timeout)$/ }, { ok: true }, { ok: true }]);
});

t.test('generated secrets are written to the work dir, readable by the owner only', async (t) => {
  const workDir = mkdtempSync(join(tmpdir(), 'lintel-sim-'));
  const building = await startSimulatedBuilding({ workDir, accessPoints: 1, zones: ['a'], devices: 1, dialects: ['unifi'] });
  t.teardown(async () => {
    await building.stop();
    rmSync(workDir, { recursive: true, force: true });
  });
  for (const file of Object.values(CREDENTIAL_FILES)) {
    t.equal(statSync(join(workDir, file)).mode & 0o777, 0o600, file);
  }
});

t.test('bad options are refused before anything listens', async (t) => {
  const workDir = mkdtempSync(join(tmpdir(), 'lintel-sim-'));
  t.teardown(() => rmSync(workDir, { recursive: true, force: true }));
  await t.rejects(startSimulatedBuilding({ workDir, dialects: ['cisco-wcl'] }), { message: /unknown dialect\(s\): cisco-wcl/ });
  await t.rejects(startSimulatedBuilding({ workDir, accessPoints: 2, zones: ['a', 'b', 'c'] }), { message: /2 access points cannot cover 3 zones/ });
});
