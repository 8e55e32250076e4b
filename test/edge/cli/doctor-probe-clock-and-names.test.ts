/**
 * Two doctor checks that read the wrong thing. The clock: the ingest's Date was compared with the
 * gateway's clock read when doctor started, before the ledger's verification and the AP polls, which
 * can take minutes; a correct clock then failed as "check NTP". A controller's APs: its results were
 * picked with `in` on its apZones, which also finds inherited names, so a plain AP named `toString`
 * was counted (and failed) as an AP of every controller. Real snmpd as the controller and the plain AP's
 * peer (a port with nothing behind it), and the real telemetry ingest's signature check.
 */
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { doctor } from '../../../edge/src/commands/doctor.js';
import { recording, startSnmpd } from '../../support/peers/snmpd.js';
import { startVerifyingIngest } from '../report/verifying-ingest.js';
import { edgeRecording } from '../support/recordings.js';
import { freePort } from './building-config.js';

const snmpd = await startSnmpd({ community: 'lintel-ro', recordings: [recording('cisco-wlc.snmpwalk'), edgeRecording('cisco-wlc-aps.snmpwalk')] });
t.teardown(() => snmpd.stop());

/** A gateway of one controller (three APs, all up), with the extra access points given, in `dir`. */
function writeConfig(dir: string, extra: string, ingest?: { url: string }): string {
  writeFileSync(join(dir, 'community'), 'lintel-ro\n', { mode: 0o600 });
  writeFileSync(join(dir, 'ingest.key'), 'gateway-key\n', { mode: 0o600 });
  // The state directory as the install step makes it: doctor run as root (these tests) creates none.
  mkdirSync(join(dir, 'state'), { mode: 0o700 });
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `buildingId: hq
pollIntervalS: 10
requestTimeoutS: 2
stateDir: state
zones: { lobby: {}, cafe: {} }
${ingest ? `ingest: { url: ${ingest.url}, secretFile: ingest.key, keyId: gw-7 }\n` : ''}accessPoints:
  - name: wlc-1
    zone: lobby
    dialect: cisco-wlc
    transport: snmp
    host: 127.0.0.1
    snmp: { version: 2c, port: ${snmpd.port}, communityFile: community }
    apZones: { AP-Lobby-1: lobby, AP-Lobby-2: lobby, AP-Cafe-1: cafe }
${extra}`,
  );
  return config;
}

async function runDoctor(config: string, clock?: () => number): Promise<{ code: number; stdout: string }> {
  const out: string[] = [];
  const code = await doctor({ config, clock }, { out: (s) => void out.push(s), err: (s) => void out.push(s) });
  return { code, stdout: out.join('') };
}

t.test('checks that took minutes before the probe: the clock is compared around the probe, and passes', async (t) => {
  const ingest = await startVerifyingIngest(t, { default: 'doctor-key', 'gw-7': 'gateway-key' });
  const config = writeConfig(t.testdir({}), '', ingest);
  // The first reading is doctor's start; every later one comes five minutes on, as if the ledger's
  // verification and an AP that never answered had taken that long.
  let readings = 0;
  const { code, stdout } = await runDoctor(config, () => (readings++ === 0 ? Date.now() - 300_000 : Date.now()));
  t.comment(stdout);
  t.match(stdout, /^ok {3}clock {5}\d{4}-.*, ingest clock differs by \d s$/m, 'the clock is the ingest\'s, give or take seconds (the Date header has whole seconds)');
  t.equal(code, 0, 'all checks pass');
  t.ok(readings >= 3, 'the clock was read again around the probe');
});

t.test('a plain AP named like an inherited property is not one of the controller\'s APs', async (t) => {
  const dir = t.testdir({});
  const config = writeConfig(
    dir,
    `  - name: toString
    zone: cafe
    dialect: aruba-aos
    transport: snmp
    host: 127.0.0.1
    snmp: { version: 2c, port: ${await freePort()}, communityFile: community }
`,
  );
  const { code, stdout } = await runDoctor(config);
  t.comment(stdout);
  t.match(stdout, /^ok {3}ap {8}wlc-1 \(cisco-wlc, snmp 127\.0\.0\.1:\d+\): reachable ✓ {2}authenticated ✓ {2}walkable ✓ {2}\d+ stations? /m, 'the controller passes');
  t.notMatch(stdout, /toString → /, 'and lists only its own APs');
  t.match(stdout, /^FAIL ap {8}toString \(aruba-aos, /m, 'the plain AP fails on its own line');
  t.equal(code, 1);
  t.match(stdout, /result: 1 problem\n$/, 'one problem: the plain AP');
});
