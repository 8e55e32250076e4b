/**
 * `lintel-edge run` reloading its config on SIGHUP (`systemctl reload`), against a simulated building:
 * an invalid file changes nothing and the collector keeps polling; a valid one adds, removes and re-zones
 * APs between two ticks (the devices of a moved AP follow it), while a setting only a restart can change
 * is named in a warning and left as it was.
 */
import t from 'tap';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { request } from 'undici';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { CREDENTIAL_FILES, startSimulatedBuilding } from '../../../edge/src/simulate/index.js';
import { startCli, until, writeBuildingConfig, type Child, type ConfigExtras } from './building-config.js';

type LogLine = Record<string, unknown> & { msg?: string };

/** The complete log lines printed so far. */
function logLines(child: Child): LogLine[] {
  const lines = child.stdout().split('\n');
  lines.pop();
  return lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine);
}

/** The value of one sample of the collector's metrics, or undefined when the series is absent. */
async function sample(port: number, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const text = await (await request(`http://127.0.0.1:${port}/metrics`)).body.text();
  const pairs = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && pairs.every((p) => l.includes(p)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** Polls of one AP so far, whatever their outcome (a loaded machine may time one out); undefined without a series. */
async function polls(port: number, ap: string): Promise<number | undefined> {
  const text = await (await request(`http://127.0.0.1:${port}/metrics`)).body.text();
  const lines = text.split('\n').filter((l) => l.startsWith('lintel_edge_ap_polls_total{') && l.includes(`ap="${ap}"`));
  return lines.length === 0 ? undefined : lines.reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** Waits for an asynchronous condition, polling, up to `ms`. */
async function eventually(condition: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

/** The AP names of the apClients readings of each ledger entry, oldest first. */
function apClientsPerEntry(stateDir: string): string[][] {
  const ledger = openLedger(join(stateDir, 'ledger.sqlite'), { readonly: true });
  try {
    return [...ledger.entries()].map((e) =>
      (JSON.parse(e.body) as { readings: Array<{ type: string; roomId: string }> }).readings.filter((r) => r.type === 'apClients').map((r) => r.roomId),
    );
  } finally {
    ledger.close();
  }
}

t.test('SIGHUP reloads the config between ticks; an invalid one changes nothing', { timeout: 240_000 }, async (t) => {
  const dir = t.testdir({});
  const workDir = join(dir, 'building');
  const building = await startSimulatedBuilding({ workDir, seed: 5, accessPoints: 4, devices: 24, rebootRate: 0, dialects: ['aruba-aos', 'openwrt-iw'] });
  t.teardown(() => building.stop());
  const names = building.accessPoints.map((ap) => ap.name);
  t.same(names, ['ap-zone-a-1', 'ap-zone-b-1', 'ap-zone-c-1', 'ap-zone-a-2'], 'the building this test was written for');
  const [added, moved, removed] = ['ap-zone-a-2', 'ap-zone-b-1', 'ap-zone-c-1'];
  const stateDir = join(dir, 'state');
  /**
   * The config, with metrics on port 0: the collector binds a free port itself and logs it (a port freed
   * for the test could be taken by the time the child binds it). The same in every version of the file,
   * so no reload sees metrics.listen change.
   */
  const writeConfig = (extras: ConfigExtras): string => {
    const file = writeBuildingConfig(building, workDir, dir, extras);
    appendFileSync(file, 'metrics: { listen: "127.0.0.1:0" }\n');
    return file;
  };
  const config = writeConfig({ exclude: [added] });

  const child = startCli(['run', '--config', config]);
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
  const ticks = () => logLines(child).filter((l) => l.msg === 'tick').length;
  const ticksAfter = (msg: string) => {
    const lines = logLines(child);
    const at = lines.findIndex((l) => l.msg === msg);
    return at < 0 ? 0 : lines.slice(at + 1).filter((l) => l.msg === 'tick').length;
  };
  t.ok(await until(() => ticks() >= 2 || child.process.exitCode !== null, 60_000), `two ticks (stderr: ${child.stderr().slice(0, 500)})`);
  const metricsPort = logLines(child).find((l) => l.msg === 'metrics listening')?.port as number;
  t.type(metricsPort, 'number', 'the metrics port is logged');
  t.equal(await sample(metricsPort, 'lintel_edge_config_reloads_total', { result: 'applied' }), 0, 'reloads are counted from 0');

  // An invalid file: the collector says what is wrong and keeps polling with what it has.
  writeConfig({
    exclude: [added],
    requestTimeoutS: 5,
    override: { [removed]: (ap) => ({ ...ap, zone: 'no-such-zone' }) },
  });
  const removedPollsBefore = (await polls(metricsPort, removed)) ?? 0;
  child.process.kill('SIGHUP');
  const rejectedMsg = 'configuration not reloaded: the file is invalid; still running on the previous configuration';
  t.ok(await until(() => logLines(child).some((l) => l.msg === rejectedMsg) || child.process.exitCode !== null, 30_000), 'the invalid file is reported');
  const rejected = logLines(child).find((l) => l.msg === rejectedMsg)!;
  t.equal(rejected.level, 50, 'as an error');
  const problems = (rejected.problems as string[]).join('\n');
  t.match(problems, /requestTimeoutS: expected at most pollIntervalS/, 'names the bad interval');
  t.match(problems, /accessPoints\[2\]\.zone: "no-such-zone" is not a zone declared under zones/, 'names the bad zone with its path');
  const community = readFileSync(join(workDir, CREDENTIAL_FILES.snmpCommunity), 'utf8').trim();
  t.notOk(child.stdout().includes(community), 'no secret in the logs');
  t.ok(await until(() => ticksAfter(rejectedMsg) >= 2 || child.process.exitCode !== null, 60_000), 'ticks go on');
  t.equal(child.process.exitCode, null, 'still running');
  t.ok(((await polls(metricsPort, removed)) ?? 0) > removedPollsBefore, `${removed} is still polled`);
  t.equal(await polls(metricsPort, added), undefined, `${added} is not polled yet`);
  t.equal(await sample(metricsPort, 'lintel_edge_config_reloads_total', { result: 'rejected' }), 1, 'counted as rejected');

  // The devices of the AP about to move, as the zone store holds them.
  const zonesDb = new Database(join(stateDir, 'zones.sqlite'), { readonly: true });
  t.teardown(() => zonesDb.close());
  const zonesOfMovedAp = () => zonesDb.prepare('SELECT zone, COUNT(*) AS n FROM tracked_devices WHERE ap = ? GROUP BY zone').all(moved) as Array<{ zone: string; n: number }>;
  const before = zonesOfMovedAp();
  t.same(before.map((r) => r.zone), ['zone-b'], `${moved}'s devices are counted in zone-b`);

  // A valid file: one AP added, one removed, one moved to another zone, and a setting that needs a restart.
  writeConfig({
    exclude: [removed],
    stateDir: join(dir, 'state-elsewhere'),
    override: { [moved]: (ap) => ({ ...ap, zone: 'zone-c' }) },
  });
  child.process.kill('SIGHUP');
  t.ok(await until(() => logLines(child).some((l) => l.msg === 'reloaded') || child.process.exitCode !== null, 30_000), 'reloaded');
  const reloaded = logLines(child).find((l) => l.msg === 'reloaded')!;
  t.same(
    { apsAdded: reloaded.apsAdded, apsRemoved: reloaded.apsRemoved, apsChanged: reloaded.apsChanged, restartNeeded: reloaded.restartNeeded },
    { apsAdded: [added], apsRemoved: [removed], apsChanged: [moved], restartNeeded: ['stateDir'] },
    'the summary names what changed',
  );
  t.ok((reloaded.rezoned as number) >= before[0]!.n, `the devices of ${moved} follow it (${String(reloaded.rezoned)})`);
  const warning = logLines(child).find((l) => l.level === 40 && l.key === 'stateDir');
  t.match(warning?.msg, /stateDir changed: a restart is needed/, 'the restart-only key is named in a warning');

  t.ok(await eventually(async () => ((await polls(metricsPort, added)) ?? 0) >= 1, 60_000), `${added} is polled`);
  t.equal(await sample(metricsPort, 'lintel_edge_ap_up', { ap: removed }), undefined, `${removed} has no series any more`);
  t.ok(await until(() => ticksAfter('reloaded') >= 1 || child.process.exitCode !== null, 60_000), 'a tick after the reload');
  // One tick on, a device that had to win its new zone by the dwell rule (switchPolls 2) would still be in zone-b.
  t.same(zonesOfMovedAp().map((r) => r.zone), ['zone-c'], `${moved}'s devices are counted in its new zone from the first tick`);
  t.ok(await until(() => ticksAfter('reloaded') >= 3 || child.process.exitCode !== null, 60_000), 'ticks go on');
  t.equal(await polls(metricsPort, removed), undefined, `${removed} is not polled again`);
  t.equal(await sample(metricsPort, 'lintel_edge_config_reloads_total', { result: 'applied' }), 1, 'counted as applied');
  t.equal(existsSync(join(dir, 'state-elsewhere')), false, 'the state stays where it was opened');

  child.process.kill('SIGTERM');
  t.equal(await child.exited, 0, 'exits 0 on SIGTERM');

  // The ledger shows the cut between two ticks: every batch before it has the old APs, every one after the new.
  const perEntry = apClientsPerEntry(stateDir);
  const cut = perEntry.findIndex((aps) => aps.includes(added));
  t.ok(cut > 0, 'batches from both configurations');
  t.ok(perEntry.slice(0, cut).some((aps) => aps.includes(removed)), `before: ${removed}`);
  t.ok(perEntry.slice(0, cut).every((aps) => !aps.includes(added)), `before: never ${added}`);
  t.ok(perEntry.slice(cut).every((aps) => !aps.includes(removed)), `after: never ${removed}`);
});
