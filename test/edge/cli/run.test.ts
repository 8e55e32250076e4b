/**
 * `lintel-edge run --config` as an installer runs it: a child process polling a simulated building over
 * SNMP and SSH, posting signed batches, serving metrics, and stopping cleanly on SIGTERM.
 */
import t from 'tap';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { startSimulatedBuilding } from '../../../edge/src/simulate/index.js';
import { startVerifyingIngest } from '../report/verifying-ingest.js';
import { logsOf, startCli, until, writeBuildingConfig } from './building-config.js';

t.test('run polls every AP, posts signed batches, serves metrics and stops on SIGTERM', async (t) => {
  const dir = t.testdir({});
  const workDir = join(dir, 'building');
  const building = await startSimulatedBuilding({ workDir, seed: 11, accessPoints: 7, devices: 25, rebootRate: 0 });
  t.teardown(() => building.stop());
  const ingest = await startVerifyingIngest(t, { default: 'run-test-key' });
  const secretFile = join(dir, 'ingest.key');
  writeFileSync(secretFile, 'run-test-key\n', { mode: 0o600 });
  const config = writeBuildingConfig(building, workDir, dir, { ingest: { url: ingest.url, secretFile } });
  // Port 0: the collector binds a free port itself and logs it. A port freed for the test could be taken
  // by the time the child binds it.
  appendFileSync(config, 'metrics: { listen: "127.0.0.1:0" }\n');

  const child = startCli(['run', '--config', config]);
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
  t.ok(await until(() => ingest.received.length >= 3 || child.process.exitCode !== null, 60_000), 'three batches arrive');
  t.equal(child.process.exitCode, null, `still running (stderr: ${child.stderr().slice(0, 500)})`);
  t.ok(ingest.received.every((r) => r.signatureValid && r.status === 200), 'signed and accepted');

  const batches = ingest.received.map((r) => JSON.parse(r.raw.toString()) as { readings: Array<Record<string, unknown>> });
  const last = batches.at(-1)!;
  const apClients = [...new Set(batches.flatMap((b) => b.readings.filter((r) => r.type === 'apClients').map((r) => r.roomId as string)))];
  t.ok(apClients.length >= 7, `apClients for the APs, including those behind controllers: ${apClients.join(', ')}`);
  t.ok(apClients.some((name) => /-controller-ap\d+$/.test(name)), 'an AP keyed by MAC is reported by its configured name');
  const counted = last.readings.filter((r) => r.type === 'totalDeviceCount').reduce((n, r) => n + (r.totalDeviceCount as number), 0);
  t.ok(counted > 0 && counted <= 25, `counted ${counted} of 25 devices`);

  const metricsPort = logsOf(child).find((l) => l.msg === 'metrics listening')?.port as number;
  t.type(metricsPort, 'number', 'the metrics port is logged');
  const metrics = await request(`http://127.0.0.1:${metricsPort}/metrics`);
  const text = await metrics.body.text();
  t.equal(metrics.statusCode, 200);
  t.match(text, /lintel_edge_ticks_total\{service="lintel-edge"\} [1-9]/);
  t.match(text, /lintel_edge_ap_up\{ap="ap-zone-a-1",service="lintel-edge"\} 1/);
  const health = await request(`http://127.0.0.1:${metricsPort}/health`);
  t.same(await health.body.json(), { status: 'ok' });

  child.process.kill('SIGTERM');
  // a stop that hangs is ended by the collector's own deadline with exit 1, so 0 means it stopped cleanly
  t.equal(await child.exited, 0, 'exits 0 on SIGTERM');

  const logs = child.stdout().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  t.ok(logs.some((l) => l.msg === 'collector started'));
  t.ok(logs.some((l) => l.msg === 'tick'));
  t.ok(logs.some((l) => l.msg === 'stopped'));
  const output = child.stdout() + child.stderr();
  const macs = [...building.deviceZones().keys()];
  t.equal(macs.filter((mac) => output.includes(mac) || output.includes(mac.replace(/:/g, ''))).length, 0, 'no device MAC in the logs');
});
