/**
 * `simulate --key-id` takes only the ids telemetry issues (shared/hmac.ts KEY_ID), as the config's
 * ingest.keyId does: anything else is bad usage (exit 2) before the building starts or the state is
 * written. An id with a newline was a header Node refused mid-tick: exit 1, and a ledger entry left
 * to be marked interrupted though it never left.
 */
import t from 'tap';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startVerifyingIngest } from '../report/verifying-ingest.js';
import { runCli } from './building-config.js';

const SECRET = 'simulate-key-id-secret';

t.test('an invalid --key-id is refused (exit 2) before anything starts; a valid one is sent', async (t) => {
  const ingest = await startVerifyingIngest(t, { default: 'not-this-one', 'gw-sim.1:a_b': SECRET });
  const dir = t.testdir({});
  const secretFile = join(dir, 'ingest.key');
  writeFileSync(secretFile, `${SECRET}\n`, { mode: 0o600 });
  const simulate = (keyId: string, stateDir: string) =>
    runCli(['simulate', '--ingest', ingest.url, '--ingest-secret-file', secretFile, '--key-id', keyId, '--ticks', '1', '--interval-ms', '300', '--seed', '3', '--state-dir', stateDir, '--output', 'json']);

  for (const [what, keyId] of [
    ['a newline (a header Node will not send)', 'gw-1\nX-Injected: yes'],
    ['a space', 'gw 1'],
    ['129 characters', 'k'.repeat(129)],
    ['nothing', ''],
  ] as const) {
    const stateDir = join(dir, `state-${what.replace(/\W+/g, '-')}`);
    const { code, stdout, stderr } = await simulate(keyId, stateDir);
    t.equal(code, 2, `${what}: ${stderr}`);
    t.match(stderr, /--key-id: expected 1 to 128 letters, digits, "\.", "_", ":" or "-", got /, what);
    t.equal(stdout, '', `${what}: no tick ran`);
    t.notOk(existsSync(stateDir), `${what}: no state written`);
  }
  t.same(ingest.received, [], 'nothing was posted');

  const valid = await simulate('gw-sim.1:a_b', join(dir, 'state-valid'));
  t.equal(valid.code, 0, valid.stderr);
  t.equal(ingest.received.length, 1, 'one tick, one batch');
  t.equal(ingest.received[0]!.headers['x-key-id'], 'gw-sim.1:a_b');
  t.equal(ingest.received[0]!.status, 200, 'accepted under that key');
});
