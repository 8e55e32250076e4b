/**
 * A SIGHUP that reaches `lintel-edge run` while it is still loading (`systemctl reload` right after
 * `start`) does not end it: it is held, then served as a reload once the collector runs. The config file
 * is a FIFO, so the collector is known to be inside its start (reading the config) when the signal is
 * sent: the test's open for writing completes only once the collector opened it for reading.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { freePort, startCli, until } from './building-config.js';

t.test('a SIGHUP while the config is being read is held and served as a reload; the collector keeps running', async (t) => {
  const dir = t.testdir({});
  const config = join(dir, 'config.yaml');
  execFileSync('mkfifo', ['-m', '0600', config]);
  const apPort = await freePort();
  const text = `buildingId: hq
pollIntervalS: 30
requestTimeoutS: 1
stateDir: ${join(dir, 'state')}
zones: { lobby: {} }
accessPoints:
  - { name: ap1, zone: lobby, dialect: aruba-aos, transport: snmp, host: 127.0.0.1, snmp: { version: 2c, port: ${apPort}, communityFile: ${join(dir, 'community')} } }
`;
  writeFileSync(join(dir, 'community'), 'public\n', { mode: 0o600 });
  // Through env(1) without NODE_OPTIONS: the test runner puts its process-info hook into every child it
  // sees spawned, and that hook catches SIGHUP, which would hide Node's default (the end of the process)
  // that the collector must not meet.
  const child = startCli(['run', '--config', config], {}, ['/usr/bin/env', '-u', 'NODE_OPTIONS']);
  t.teardown(() => child.process.kill('SIGKILL'));
  // Resolves once the collector opened the FIFO to read it.
  const serveConfig = () => open(config, 'w');
  const firstRead = await serveConfig();
  t.ok(child.process.kill('SIGHUP'), 'SIGHUP sent while the collector reads its config');
  await firstRead.writeFile(text);
  await firstRead.close();

  // Only once it started may the FIFO be opened again: a writer opening it earlier would join the read
  // of the start, not the reload's.
  await until(() => child.stdout().includes('"msg":"collector started"') || child.process.exitCode !== null || child.process.signalCode !== null, 60_000);
  t.equal(child.process.signalCode, null, 'not ended by the SIGHUP');
  if (!child.stdout().includes('"msg":"collector started"')) {
    t.fail(`the collector did not start: ${child.stderr().slice(0, 300)}`);
    return;
  }
  // The held SIGHUP is served as a reload, which reads the config again, through the FIFO.
  const reread = await serveConfig();
  await reread.writeFile(text);
  await reread.close();
  t.ok(await until(() => child.stdout().includes('"msg":"reloading the configuration"'), 30_000), 'the held SIGHUP was served as a reload');
  t.ok(await until(() => child.stdout().includes('"msg":"reloaded"'), 30_000), 'the reload completed');

  child.process.kill('SIGTERM');
  t.equal(await child.exited, 0, 'stopped cleanly by SIGTERM');
  t.equal(child.process.signalCode, null, 'not ended by a signal');
});
