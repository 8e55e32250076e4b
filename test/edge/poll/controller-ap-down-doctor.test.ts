/**
 * `lintel-edge doctor` against a real snmpd playing a controller with APs down: the controller answers,
 * and every AP it reports down is named, with the verdict that its devices are frozen.
 */
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { doctor } from '../../../edge/src/commands/doctor.js';
import { startSnmpd } from '../../support/peers/snmpd.js';
import { edgeRecording } from '../support/recordings.js';

t.test('doctor names each AP the controller reports down', async (t) => {
  const snmpd = await startSnmpd({ community: 'lintel-ro', recordings: [edgeRecording('cisco-wlc-ap-down.snmpwalk')] });
  t.teardown(() => snmpd.stop());
  const dir = t.testdir({});
  writeFileSync(join(dir, 'community'), 'lintel-ro\n', { mode: 0o600 });
  // The state directory as the install step makes it: doctor run as root (these tests) creates none.
  mkdirSync(join(dir, 'state'), { mode: 0o700 });
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `buildingId: hq
pollIntervalS: 10
requestTimeoutS: 10
stateDir: state
zones: { lobby: {}, cafe: {} }
accessPoints:
  - name: wlc-1
    zone: lobby
    dialect: cisco-wlc
    transport: snmp
    host: 127.0.0.1
    snmp: { version: 2c, port: ${snmpd.port}, communityFile: community }
    apZones: { AP-Lobby-1: lobby, AP-Lobby-2: lobby, AP-Cafe-1: cafe }
`,
  );
  const out: string[] = [];
  const code = await doctor({ config }, { out: (s) => void out.push(s), err: (s) => void out.push(s) });
  const stdout = out.join('');
  t.comment(stdout);
  t.equal(code, 1, 'an AP down is a problem to fix before leaving the building');
  t.match(
    stdout,
    `FAIL ap        wlc-1 (cisco-wlc, snmp 127.0.0.1:${snmpd.port}): reachable ✓  authenticated ✓  walkable ✓  AP down ✗ (its devices are frozen) — ` +
      'AP AP-Lobby-1 not joined to the controller (not listed in bsnAPTable); AP AP-Lobby-2 not up on the controller: bsnAPOperationStatus is 3 (downloading)\n',
  );
  t.match(stdout, /result: 1 problem/);
});
