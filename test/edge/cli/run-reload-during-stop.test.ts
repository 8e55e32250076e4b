/**
 * `lintel-edge run` asked to reload while a tick is in flight (its batch post waiting on a silent
 * ingest): the reload waits for the tick, a second SIGHUP queues behind it, and a stop that comes first
 * wins: nothing is reloaded, a SIGHUP during the stop is ignored, and the stop ends cleanly.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startVerifyingIngest } from '../report/verifying-ingest.js';
import { freePort, startCli, until, type Child } from './building-config.js';

function messages(child: Child): string[] {
  const lines = child.stdout().split('\n');
  lines.pop();
  return lines.filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as { msg: string }).msg);
}

function writeConfig(path: string, dir: string, ingestUrl: string, apPorts: number[]): void {
  const aps = apPorts.map(
    (port, i) =>
      `  - { name: ap${i + 1}, zone: lobby, dialect: aruba-aos, transport: snmp, host: 127.0.0.1, snmp: { version: 2c, port: ${port}, communityFile: ${join(dir, 'community')} } }`,
  );
  writeFileSync(
    path,
    `buildingId: reload-stop-test
pollIntervalS: 15
requestTimeoutS: 1
stateDir: ${join(dir, 'state')}
zones: { lobby: {} }
accessPoints:
${aps.join('\n')}
ingest: { url: "${ingestUrl}", secretFile: ${join(dir, 'ingest.key')}, timeoutS: 15 }
`,
    { mode: 0o600 },
  );
}

t.test('a reload waiting for the tick in flight gives way to a stop; SIGHUP while stopping is ignored', { timeout: 120_000 }, async (t) => {
  const dir = t.testdir({ community: 'public\n', 'ingest.key': 'reload-stop-key\n' });
  const ingest = await startVerifyingIngest(t, { default: 'reload-stop-key' });
  ingest.behave('hang');
  const config = join(dir, 'config.yaml');
  writeConfig(config, dir, ingest.url, [await freePort()]);

  const child = startCli(['run', '--config', config]);
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
  const logged = (msg: string) => until(() => messages(child).includes(msg) || child.process.exitCode !== null, 30_000);
  t.ok(await until(() => ingest.received.length >= 1 || child.process.exitCode !== null, 30_000), `the first batch is being posted (stderr: ${child.stderr().slice(0, 300)})`);

  writeConfig(config, dir, ingest.url, [await freePort(), await freePort()]);
  child.process.kill('SIGHUP');
  t.ok(await logged('reloading the configuration'), 'a reload starts');
  child.process.kill('SIGHUP');
  t.ok(await logged('a reload is in progress; one more follows it'), 'a second SIGHUP queues behind it');
  t.notOk(messages(child).includes('reloaded'), 'nothing is applied while the tick is in flight');

  child.process.kill('SIGTERM');
  t.ok(await logged('stopping'), 'stopping');
  child.process.kill('SIGHUP');
  t.ok(await logged('stopping: the configuration is not reloaded'), 'a SIGHUP while stopping is ignored');
  t.equal(await child.exited, 0, `exits 0 (stdout tail: ${child.stdout().slice(-600)})`);

  const all = messages(child);
  t.ok(all.includes('configuration not reloaded: the collector is stopping'), 'the waiting reload gives way to the stop');
  t.notOk(all.includes('reloaded'), 'neither it nor the queued one is applied');
  t.equal(all.filter((m) => m === 'reloading the configuration').length, 1, 'the queued reload does not start once stopping');
  t.ok(all.includes('stopped'));
});
