/**
 * A metrics.listen the collector cannot bind ends the start with a log line that names metrics.listen,
 * the address and the errno (it said `cannot start` with `Error (EACCES)` alone). A privileged port the
 * service user may not bind (EACCES) stays so until the config changes: exit 2, which the unit does not
 * restart. A port another process holds (EADDRINUSE) may be freed: exit 1, and the unit tries again.
 */
import t from 'tap';
import { appendFileSync, chownSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { listen } from '../../../shared/lifecycle.js';
import { logsOf, startCli, until, writeSilentCollectorConfig, type Child } from './building-config.js';

const NOBODY = 65534;
/** As the service user would run it: nobody, with no supplementary groups, the environment kept. */
const AS_NOBODY = ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups'];
/** Through env(1) without NODE_OPTIONS: the test runner's process-info hook stays out of the child. */
const WITHOUT_TEST_HOOK = ['/usr/bin/env', '-u', 'NODE_OPTIONS'];

/** Waits for the collector to end, or to start after all (then it is stopped, and the test fails on its exit code). */
async function ended(child: Child): Promise<number | null> {
  await until(() => child.process.exitCode !== null || logsOf(child).some((l) => l.msg === 'collector started'), 30_000);
  if (child.process.exitCode === null) child.process.kill('SIGTERM');
  return child.exited;
}

t.test('a metrics port another process holds: exit 1, naming metrics.listen, the address and EADDRINUSE', async (t) => {
  const holder = createServer();
  const port = await listen(holder, 0, '127.0.0.1');
  t.teardown(() => new Promise<void>((resolve) => holder.close(() => resolve())));
  const dir = t.testdir({});
  const config = await writeSilentCollectorConfig(dir, join(dir, 'state'));
  appendFileSync(config, `metrics: { listen: "127.0.0.1:${port}" }\n`);

  const child = startCli(['run', '--config', config], {}, WITHOUT_TEST_HOOK);
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
  t.equal(await ended(child), 1, `exit 1, which the unit restarts (stderr: ${child.stderr().slice(0, 500)})`);
  t.match(logsOf(child).find((l) => l.level === 50), {
    msg: `cannot start: metrics.listen 127.0.0.1:${port} cannot be bound (EADDRINUSE): another process listens there; the unit tries again, and if it stays so, stop that process or choose another port`,
    listen: `127.0.0.1:${port}`,
  });
});

t.test('a privileged metrics port run as the service user: exit 2, naming metrics.listen, the address and EACCES', async (t) => {
  const unprivilegedFrom = Number(readFileSync('/proc/sys/net/ipv4/ip_unprivileged_port_start', 'utf8'));
  t.ok(unprivilegedFrom > 80, `port 80 is privileged on this host (unprivileged ports start at ${unprivilegedFrom})`);
  const dir = t.testdir({});
  const state = join(dir, 'state');
  mkdirSync(state, { mode: 0o700 });
  chownSync(state, NOBODY, NOBODY);
  const config = await writeSilentCollectorConfig(dir, state, 0o644);
  appendFileSync(config, 'metrics: { listen: "127.0.0.1:80" }\n');

  const child = startCli(['run', '--config', config], {}, [...AS_NOBODY, ...WITHOUT_TEST_HOOK]);
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
  t.equal(await ended(child), 2, `exit 2, which the unit does not restart (stderr: ${child.stderr().slice(0, 500)})`);
  t.match(logsOf(child).find((l) => l.level === 50), {
    msg: 'cannot start: metrics.listen 127.0.0.1:80 cannot be bound (EACCES): a port below 1024 needs a privilege the service user does not have (the unit grants no capability); choose a port of 1024 or above',
    listen: '127.0.0.1:80',
  });
});
