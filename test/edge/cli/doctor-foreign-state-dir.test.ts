/**
 * `sudo lintel-edge doctor` on a fresh install: the state directory belongs to the service user, and a
 * ledger doctor created there as root would leave the collector unable to write it (it would not start).
 * Doctor then creates and writes nothing there, sends no probe, and says whom to run it as.
 */
import t from 'tap';
import { chownSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startVerifyingIngest } from '../report/verifying-ingest.js';
import { freePort, runCli, writeSingleApConfig } from './building-config.js';

const NOBODY = 65534;

t.test('doctor as root over another user’s state directory writes nothing there and names the owner', async (t) => {
  t.equal(process.geteuid?.(), 0, 'the tests run as root, as `sudo lintel-edge doctor` does');
  const dir = t.testdir({});
  const ingest = await startVerifyingIngest(t, { default: 'doctor-key' });
  writeFileSync(join(dir, 'ingest.key'), 'doctor-key\n', { mode: 0o600 });
  writeFileSync(join(dir, 'community'), 'public\n', { mode: 0o600 });
  const config = writeSingleApConfig(dir, { buildingId: 'hq', apPort: await freePort(), ingestUrl: ingest.url, ingestTimeoutS: 2 });
  const state = join(dir, 'state');
  mkdirSync(state, { mode: 0o700 });
  chownSync(state, NOBODY, NOBODY);

  const { code, stdout } = await runCli(['doctor', '--config', config]);
  t.comment(stdout);
  t.equal(code, 1, 'a problem');
  t.match(
    stdout,
    new RegExp(
      `FAIL state {5}${state.replace(/[.]/g, '\\.')} belongs to nobody \\(uid 65534\\), not to this user, root \\(uid 0\\).*Run doctor as its owner: runuser -u nobody -- env STATE_DIRECTORY=${state.replace(/[.]/g, '\\.')} lintel-edge doctor --config ${config.replace(/[.]/g, '\\.')} \\(nothing in it was read or written\\)`,
    ),
  );
  t.match(stdout, /warn ingest {4}not probed: the probe is recorded in the ledger first/);
  t.same(readdirSync(state), [], 'no ledger.sqlite (nor anything else) was created');
  t.equal(ingest.received.length, 0, 'and no probe left the gateway');
});
