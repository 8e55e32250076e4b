/**
 * `sudo lintel-edge doctor` on a fresh install: the state directory belongs to the service user, and a
 * ledger doctor created there as root would leave the collector unable to write it (it would not start).
 * Doctor then creates and writes nothing there, sends no probe, and says whom to run it as. Where the
 * state directory does not exist yet, root's doctor does not create it either (it would be root's), and
 * names the install step that makes it, and the unit's cache directory, the service user's. (The commands
 * printed for the service user give that cache directory: doctor-service-user-commands.test.ts.)
 */
import t, { type Test } from 'tap';
import { createServer } from 'node:http';
import { chownSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { closeServer, listen } from '../../../shared/lifecycle.js';
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

/** An ingest stand-in that no call may reach: each is recorded and answered 500. */
async function ingestNoCallMayReach(t: Test): Promise<{ url: string; calls: string[] }> {
  const calls: string[] = [];
  const server = createServer((req, res) => {
    calls.push(`${req.method} ${req.url}`);
    res.writeHead(500).end();
  });
  const port = await listen(server, 0, '127.0.0.1');
  t.teardown(() => closeServer(server));
  return { url: `http://127.0.0.1:${port}/ingest`, calls };
}

t.test('doctor as root where the state directory does not exist yet creates nothing and names the install step', async (t) => {
  t.equal(process.geteuid?.(), 0, 'the tests run as root, as `sudo lintel-edge doctor` does');
  const dir = t.testdir({});
  const ingest = await ingestNoCallMayReach(t);
  writeFileSync(join(dir, 'ingest.key'), 'doctor-key\n', { mode: 0o600 });
  writeFileSync(join(dir, 'community'), 'public\n', { mode: 0o600 });
  const config = writeSingleApConfig(dir, { buildingId: 'hq', apPort: await freePort(), ingestUrl: ingest.url, ingestTimeoutS: 2 });
  const state = join(dir, 'state');

  const { code, stdout } = await runCli(['doctor', '--config', config]);
  t.comment(stdout);
  t.equal(code, 1, 'a problem');
  const quoted = (path: string) => path.replace(/[.]/g, '\\.');
  t.match(
    stdout,
    new RegExp(
      `FAIL state {5}${quoted(state)} does not exist, and doctor run as root does not create it: .*Create it, and the unit's cache directory, for the service user first: ` +
        `install -d -m 0700 -o lintel-edge -g lintel-edge ${quoted(state)} /var/cache/lintel-edge; ` +
        `then run doctor as that user: runuser -u lintel-edge -- env STATE_DIRECTORY=${quoted(state)} CACHE_DIRECTORY=/var/cache/lintel-edge lintel-edge doctor --config ${quoted(config)} \\(nothing was created\\)`,
    ),
  );
  t.match(stdout, /warn ingest {4}not probed: the probe is recorded in the ledger first/);
  t.notOk(existsSync(state), 'the state directory was not created');
  t.equal(ingest.calls.length, 0, 'and no probe left the gateway');
});
