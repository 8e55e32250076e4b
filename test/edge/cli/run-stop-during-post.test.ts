/**
 * `lintel-edge run` stopped while its batch post waits on a silent ingest: the post may run out its
 * configured ingest.timeoutS (the config allows up to pollIntervalS), and the stop still ends cleanly,
 * with the batch's delivery recorded, instead of being cut off as a hang; a second signal during it too.
 */
import t, { type Test } from 'tap';
import { join } from 'node:path';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { startVerifyingIngest } from '../report/verifying-ingest.js';
import { freePort, startCli, until, writeSingleApConfig } from './building-config.js';

/**
 * `lintel-edge run` against an ingest that never answers, with a 14 s ingest timeout, once its first
 * batch is being posted; killed at teardown if still running.
 */
async function runWithPostHanging(t: Test) {
  const dir = t.testdir({ community: 'public\n', 'ingest.key': 'stop-test-key\n' });
  const ingest = await startVerifyingIngest(t, { default: 'stop-test-key' });
  ingest.behave('hang');
  const apPort = await freePort();
  const config = writeSingleApConfig(dir, { buildingId: 'stop-test', apPort, ingestUrl: ingest.url, ingestTimeoutS: 14 });
  const child = startCli(['run', '--config', config]);
  t.teardown(() => {
    if (child.process.exitCode === null) child.process.kill('SIGKILL');
  });
  t.ok(await until(() => ingest.received.length >= 1 || child.process.exitCode !== null, 30_000), `the first batch is being posted (stderr: ${child.stderr().slice(0, 300)})`);
  return { dir, child };
}

t.test('SIGTERM during a post with a long ingest timeout waits for it and exits 0', { timeout: 90_000 }, async (t) => {
  const { dir, child } = await runWithPostHanging(t);
  t.equal(child.process.exitCode, null, 'still running');

  child.process.kill('SIGTERM');
  t.equal(await child.exited, 0, `exits 0 once the post timed out (stdout tail: ${child.stdout().slice(-600)})`);
  const logs = child.stdout().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  t.notOk(logs.some((l) => l.msg === 'stop took too long; exiting'), 'not ended as a hang');
  t.ok(logs.some((l) => l.msg === 'ingest unreachable; batch dropped, the next tick supersedes it' && l.reason === 'timeout'), 'the post ran out its timeout');
  t.ok(logs.some((l) => l.msg === 'stopped'));

  const ledger = openLedger(join(dir, 'state', 'ledger.sqlite'), { readonly: true });
  t.teardown(() => ledger.close());
  t.same([...ledger.entries()].map((e) => e.delivery), ['unreachable'], 'the batch is in the ledger with how its post went');
});

t.test('a second SIGTERM and a SIGINT during that stop do not cut it short', { timeout: 90_000 }, async (t) => {
  const { dir, child } = await runWithPostHanging(t);
  const logsOf = () => child.stdout().trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);

  child.process.kill('SIGTERM');
  t.ok(await until(() => logsOf().some((l) => l.msg === 'stopping') || child.process.exitCode !== null, 10_000), 'the stop began');
  child.process.kill('SIGTERM');
  child.process.kill('SIGINT');
  t.equal(await child.exited, 0, `exits 0 once the post timed out (stdout tail: ${child.stdout().slice(-600)})`);
  const logs = logsOf();
  t.equal(logs.filter((l) => l.msg === 'already stopping; the stop continues').length, 2, 'each later signal is logged and ignored');
  t.ok(logs.some((l) => l.msg === 'stopped'));

  const ledger = openLedger(join(dir, 'state', 'ledger.sqlite'), { readonly: true });
  t.teardown(() => ledger.close());
  t.same([...ledger.entries()].map((e) => e.delivery), ['unreachable'], 'the batch is in the ledger with how its post went');
});
