/**
 * `lintel-edge run` killed (SIGKILL, as a crash or a power cut would stop it) while its batch post waits
 * on the ingest: the ledger entry was appended, its outcome never recorded. The next start marks it
 * `interrupted` instead of leaving a null delivery forever, does not post it again (the next tick
 * supersedes it), and the auditor's commands show the mark.
 */
import t from 'tap';
import { join } from 'node:path';
import { request } from 'undici';
import { main } from '../../../edge/src/commands/main.js';
import { freePort, startCli, until, writeSingleApConfig } from '../cli/building-config.js';
import { captureIo } from '../support/cli-io.js';
import { deliveriesOf } from './ledger-reads.js';
import { startVerifyingIngest } from './verifying-ingest.js';

t.test('a batch whose post a SIGKILL cut short is marked interrupted at the next start, not re-sent', { timeout: 120_000 }, async (t) => {
  const dir = t.testdir({ community: 'public\n', 'ingest.key': 'crash-test-key\n' });
  const ingest = await startVerifyingIngest(t, { default: 'crash-test-key' });
  ingest.behave('hang');
  const apPort = await freePort();
  const metricsPort = await freePort();
  const config = writeSingleApConfig(dir, { buildingId: 'crash-test', apPort, ingestUrl: ingest.url, ingestTimeoutS: 25, metricsPort });
  const ledgerPath = join(dir, 'state', 'ledger.sqlite');

  const first = startCli(['run', '--config', config]);
  t.teardown(() => {
    if (first.process.exitCode === null) first.process.kill('SIGKILL');
  });
  t.ok(await until(() => ingest.received.length >= 1 || first.process.exitCode !== null, 30_000), `the first batch is being posted (stderr: ${first.stderr().slice(0, 300)})`);
  t.equal(first.process.exitCode, null, 'still running, the post in flight');
  first.process.kill('SIGKILL');
  await first.exited;
  const lostBody = ingest.received[0]!.raw.toString('utf8');
  t.same(deliveriesOf(ledgerPath), [null], 'killed mid-post: the entry has no outcome yet');

  ingest.behave('verify');
  const second = startCli(['run', '--config', config]);
  t.teardown(() => {
    if (second.process.exitCode === null) second.process.kill('SIGKILL');
  });
  t.ok(
    await until(() => deliveriesOf(ledgerPath)[1] === 'accepted' || second.process.exitCode !== null, 30_000),
    `the restarted gateway posts its own first batch (stderr: ${second.stderr().slice(0, 300)})`,
  );
  const metrics = await request(`http://127.0.0.1:${metricsPort}/metrics`);
  const text = await metrics.body.text();
  t.match(text, /lintel_edge_batches_total\{delivery="interrupted",service="lintel-edge"\} 1\n/, 'counted in the batches by delivery');
  second.process.kill('SIGTERM');
  t.equal(await second.exited, 0, 'stops cleanly');

  t.same(deliveriesOf(ledgerPath), ['interrupted', 'accepted'], 'the cut-short entry is marked, the new one recorded');
  t.equal(ingest.received.filter((r) => r.raw.toString('utf8') === lostBody).length, 1, 'the interrupted batch was not posted again');
  const logs = second.stdout().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  t.match(
    logs.find((l) => 'interrupted' in l),
    { level: 40, interrupted: 1, firstSeq: 1, lastSeq: 1 },
    'the start warns about it',
  );

  const exported = captureIo();
  t.equal(await main(['ledger', 'export', '--ledger', ledgerPath], exported.io), 0);
  const lines = exported.out.join('').trim().split('\n').map((l) => JSON.parse(l) as { seq: number; delivery: string; body: string });
  t.same(lines.map((l) => [l.seq, l.delivery]), [[1, 'interrupted'], [2, 'accepted']], 'the export shows the mark');
  t.equal(lines[0]!.body, lostBody, 'and the exact bytes that may have left');
  const verified = captureIo();
  t.equal(await main(['ledger', 'verify', '--ledger', ledgerPath], verified.io), 0, 'the chain is intact (the mark is not chained)');
  const audited = captureIo();
  t.equal(await main(['ledger', 'audit', '--ledger', ledgerPath], audited.io), 0, audited.out.join(''));
  t.match(audited.out.join(''), /audit passed: 2 entries/);
});
