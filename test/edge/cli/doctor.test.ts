/**
 * `lintel-edge doctor --config`: per AP reachable, authenticated, walkable and its stations; the ingest
 * probe; the clock; exit 1 on any failure, with a line that says what failed.
 */
import t, { type Test } from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ssh2 from 'ssh2';
import { doctor } from '../../../edge/src/commands/doctor.js';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { startSimulatedBuilding } from '../../../edge/src/simulate/index.js';
import { serve } from '../../support/http.js';
import { startVerifyingIngest } from '../report/verifying-ingest.js';
import { runCli, writeBuildingConfig } from './building-config.js';

/**
 * What nginx answers a plain HTTP request on its HTTPS port: 400 and an HTML page. Only the ingest path
 * is expected; anything else fails the test at teardown.
 */
async function startPlainHttpToHttpsPort(t: Test): Promise<{ url: string; calls: string[] }> {
  const calls: string[] = [];
  const unexpected: string[] = [];
  t.teardown(() => {
    if (unexpected.length > 0) throw new Error(`the proxy stand-in got calls it was not set up for: ${unexpected.join(' | ')}`);
  });
  const { url } = await serve(t, (req, res) => {
    if (req.method !== 'POST' || req.url !== '/ingest') unexpected.push(`${req.method} ${req.url}`);
    else calls.push(`${req.method} ${req.url}`);
    req.resume();
    res.writeHead(400, { 'content-type': 'text/html' }).end('<html><head><title>400 The plain HTTP request was sent to HTTPS port</title></head><body></body></html>\n');
  });
  return { url: `${url}/ingest`, calls };
}

/**
 * `<sub>` with its state directory made as the install step makes it (`install -d -m 0700 …`): doctor
 * run as root, as these tests run, creates none (see doctor-foreign-state-dir.test.ts).
 */
function withStateDir(sub: string): void {
  mkdirSync(join(sub, 'state'), { recursive: true, mode: 0o700 });
}

t.test('doctor checks every AP, the ingest and the clock', async (t) => {
  const dir = t.testdir({});
  const workDir = join(dir, 'building');
  const building = await startSimulatedBuilding({ workDir, seed: 5, accessPoints: 7, devices: 20, rebootRate: 0 });
  t.teardown(() => building.stop());
  const ingest = await startVerifyingIngest(t, { default: 'doctor-key', 'gw-7': 'gateway-key' });
  const good = join(dir, 'good.key');
  writeFileSync(good, 'gateway-key\n', { mode: 0o600 });

  t.test('all good: exit 0', async (t) => {
    const sub = join(dir, 'good');
    withStateDir(sub);
    const config = writeBuildingConfig(building, workDir, sub, { ingest: { url: ingest.url, secretFile: good, keyId: 'gw-7' }, pollIntervalS: 5, requestTimeoutS: 3 });
    const before = ingest.received.length;
    const { code, stdout } = await runCli(['doctor', '--config', config]);
    t.comment(stdout);
    t.equal(code, 0);
    for (const ap of building.accessPoints) {
      t.match(stdout, new RegExp(`ok   ap        ${ap.name} \\(${ap.dialect}, .*\\): reachable ✓  authenticated ✓  walkable ✓  \\d+ stations?`), `${ap.name} checked`);
    }
    // The stand-in keeps no retention: it takes the probe's reading (the real service refuses it as too old:
    // doctor-real-ingest.test.ts).
    t.match(stdout, /ok {3}ingest .*\(key id gw-7\): reachable ✓ {2}signature accepted ✓ {2}building "test-building" accepted ✓ \(200: this ingest kept the probe's reading, 0 devices on 2001-01-01\)/);
    t.match(stdout, /ok {3}clock {5}\d{4}-.*ingest clock differs by \d+ s/);
    t.match(stdout, /result: all checks passed/);
    const probe = ingest.received.at(-1)!;
    t.equal(ingest.received.length, before + 1, 'one probe batch');
    t.same(JSON.parse(probe.raw.toString()).readings, [{ type: 'totalDeviceCount', buildingId: 'test-building', roomId: building.zones[0], timestamp: Date.UTC(2001, 0, 1), totalDeviceCount: 0 }], 'one reading of the building, dated 2001');
    t.match(JSON.parse(probe.raw.toString()), { batchId: /^doctor-/ });
    // A gateway that never ran: the probe is recorded in a ledger created for it, as any batch that leaves.
    const ledger = openLedger(join(sub, 'state', 'ledger.sqlite'), { readonly: true });
    t.teardown(() => ledger.close());
    const entries = [...ledger.entries()];
    t.same(entries.map((e) => [e.body, e.delivery]), [[probe.raw.toString(), 'accepted']], 'the exact bytes sent, with how the post went');
    t.ok(ledger.verify().ok);
  });

  t.test('a probe that cannot be recorded in the ledger is not sent', async (t) => {
    const sub = join(dir, 'no-ledger');
    withStateDir(sub);
    // A directory where the ledger belongs: no ledger can be opened there.
    mkdirSync(join(sub, 'state', 'ledger.sqlite'));
    const config = writeBuildingConfig(building, workDir, sub, { ingest: { url: ingest.url, secretFile: good, keyId: 'gw-7' }, pollIntervalS: 5, requestTimeoutS: 3 });
    const before = ingest.received.length;
    const { code, stdout } = await runCli(['doctor', '--config', config]);
    t.comment(stdout);
    t.equal(code, 1);
    t.match(stdout, /FAIL ingest {4}cannot record the probe in the ledger .*; not sent/);
    t.equal(ingest.received.length, before, 'nothing left the gateway');
  });

  t.test('broken AP, wrong key and wrong ingest secret: exit 1, each named', async (t) => {
    const sub = join(dir, 'bad');
    withStateDir(sub);
    const wrongKey = join(sub, 'wrong-ssh-key');
    writeFileSync(wrongKey, ssh2.utils.generateKeyPairSync('ed25519').private, { mode: 0o600 });
    const bad = join(sub, 'bad.key');
    writeFileSync(bad, 'not-the-key\n', { mode: 0o600 });
    // The discard port: nothing listens there, and a port freed for the test could be taken meanwhile.
    const closed = 9;
    const snmp = building.accessPoints.find((ap) => ap.target.transport === 'snmp' && !ap.apZones)!;
    const ssh = building.accessPoints.find((ap) => ap.target.transport === 'ssh')!;
    const config = writeBuildingConfig(building, workDir, sub, {
      ingest: { url: ingest.url, secretFile: bad },
      pollIntervalS: 5,
      requestTimeoutS: 2,
      override: {
        [snmp.name]: (ap) => ({ ...ap, snmp: { ...(ap.snmp as object), port: closed } }),
        [ssh.name]: (ap) => ({ ...ap, ssh: { ...(ap.ssh as object), privateKeyFile: wrongKey } }),
      },
    });
    const { code, stdout } = await runCli(['doctor', '--config', config]);
    t.comment(stdout);
    t.equal(code, 1);
    t.match(stdout, new RegExp(`FAIL ap        ${snmp.name} .*: reachable \\? {2}no answer in time`));
    t.match(stdout, new RegExp(`FAIL ap        ${ssh.name} .*: reachable ✓ {2}authenticated ✗`));
    t.match(stdout, /FAIL ingest .*: reachable ✓ {2}signature refused ✗ \(check ingest.secretFile and ingest.keyId\)/);
    t.match(stdout, /result: 3 problems/);
  });

  t.test('an ingest URL a proxy answers 400 for (plain HTTP to its HTTPS port): exit 1, the answer named', async (t) => {
    // Any 400 once passed, as the empty probe's refusal past the signature; this one proves nothing.
    const proxy = await startPlainHttpToHttpsPort(t);
    const sub = join(dir, 'proxy');
    withStateDir(sub);
    const config = writeBuildingConfig(building, workDir, sub, { ingest: { url: proxy.url, secretFile: good, keyId: 'gw-7' }, pollIntervalS: 5, requestTimeoutS: 3 });
    const { code, stdout } = await runCli(['doctor', '--config', config]);
    t.comment(stdout);
    t.equal(code, 1);
    t.match(stdout, /FAIL ingest .*\(key id gw-7\): reachable ✓ {2}probe refused ✗ \(400 .*The plain HTTP request was sent to HTTPS port/);
    t.equal(proxy.calls.length, 1, 'one probe');
  });

  t.test('a gateway clock off from the ingest, or not set at all: exit 1, the clock named', async (t) => {
    const sub = join(dir, 'clock');
    withStateDir(sub);
    const config = writeBuildingConfig(building, workDir, sub, { ingest: { url: ingest.url, secretFile: good, keyId: 'gw-7' }, pollIntervalS: 5, requestTimeoutS: 3 });
    const run = async (clock: () => number) => {
      const out: string[] = [];
      const code = await doctor({ config, clock }, { out: (s) => void out.push(s), err: (s) => void out.push(s) });
      return { code, stdout: out.join('') };
    };
    const ahead = await run(() => Date.now() + 2 * 3_600_000);
    t.equal(ahead.code, 1);
    t.match(ahead.stdout, /^FAIL clock {5}\d{4}-.*, ingest clock differs by (7199|720\d) s \(more than 60 s: check NTP\)$/m);
    t.match(ahead.stdout, /result: 1 problem\n$/, 'the clock is the only problem');
    const unset = await run(() => Date.UTC(1970, 0, 1, 0, 5));
    t.equal(unset.code, 1);
    t.match(unset.stdout, /^FAIL clock {5}the gateway's clock says 1970-01-01T00:05:00\.000Z; set the time \(NTP\) before counting$/m);
  });

  t.test('an unreachable ingest and an invalid config', async (t) => {
    const sub = join(dir, 'gone');
    withStateDir(sub);
    const config = writeBuildingConfig(building, workDir, sub, { ingest: { url: 'http://127.0.0.1:9/ingest', secretFile: good } });
    const gone = await runCli(['doctor', '--config', config]);
    t.equal(gone.code, 1);
    t.match(gone.stdout, /FAIL ingest .*: reachable ✗ \(ECONNREFUSED\)/);
    writeFileSync(join(sub, 'broken.yaml'), 'buildingId: hq\npollIntervalS: 1\nrequestTimeoutS: 5\n');
    const invalid = await runCli(['doctor', '--config', join(sub, 'broken.yaml')]);
    t.equal(invalid.code, 2);
    t.match(invalid.stderr, /requestTimeoutS: expected at most pollIntervalS \(1\), got 5/);
    t.match(invalid.stderr, /zones: expected a map from zone id to its settings, got nothing/);
  });
});
