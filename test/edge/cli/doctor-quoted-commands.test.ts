/**
 * The commands doctor prints for the installer to paste into a shell hold each value as one word. A
 * building id may hold a space ("HQ Amsterdam"): printed as it was, `keys-cli.ts bind <keyId> --building
 * HQ Amsterdam` was refused by keys-cli ("bind: unexpected argument"). A path with a space split the
 * `runuser … doctor --config <file>` line alike. Each line is split here by a real POSIX shell, and the
 * bind command is run, as printed, by the real keys-cli against the real telemetry service.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { doctor } from '../../../edge/src/commands/doctor.js';
import { shellWord } from '../../../edge/src/ui/shell-word.js';
import { startHarness } from '../../cloud/telemetry/support/harness.js';
import { freePort, REPO } from './building-config.js';

const NOBODY = 65534;

/** The words a POSIX shell makes of `line`, each printed back by printf. */
function shellSplit(line: string): string[] {
  return execFileSync('sh', ['-c', `printf '%s\\n' ${line}`], { encoding: 'utf8' }).split('\n').slice(0, -1);
}

/** The text of `stdout` between `before` and `after`: a command doctor printed inside its line. */
function printedCommand(stdout: string, before: string, after: string): string {
  const start = stdout.indexOf(before);
  const end = stdout.indexOf(after, start + before.length);
  return start === -1 || end === -1 ? '' : stdout.slice(start + before.length, end);
}

/** A config for one SNMP AP that answers nothing, posting to `ingestUrl` with key `keyId`; its paths under `dir`. */
function writeConfig(dir: string, options: { buildingId: string; apPort: number; ingestUrl: string; keyId: string }): string {
  const config = join(dir, 'config.yaml');
  writeFileSync(join(dir, 'community'), 'public\n', { mode: 0o600 });
  writeFileSync(
    config,
    `buildingId: ${JSON.stringify(options.buildingId)}
pollIntervalS: 30
requestTimeoutS: 1
stateDir: ${JSON.stringify(join(dir, 'state'))}
zones: { lobby: {} }
accessPoints:
  - { name: ap1, zone: lobby, dialect: aruba-aos, transport: snmp, host: 127.0.0.1, snmp: { version: 2c, port: ${options.apPort}, communityFile: ${JSON.stringify(join(dir, 'community'))} } }
ingest: { url: "${options.ingestUrl}", secretFile: ${JSON.stringify(join(dir, 'ingest.key'))}, keyId: ${options.keyId}, timeoutS: 2 }
`,
    { mode: 0o600 },
  );
  return config;
}

async function runDoctor(config: string): Promise<{ code: number; stdout: string }> {
  const out: string[] = [];
  const code = await doctor({ config, clock: () => Date.now() }, { out: (s) => void out.push(s), err: (s) => void out.push(s) });
  return { code, stdout: out.join('') };
}

t.test('a value is one shell word whatever it holds, and a plain one is left as it is', async (t) => {
  const values = ['/etc/lintel-edge/config.yaml', 'gw-lisbon-01', 'HQ Amsterdam', "O'Hare's wing", '', '$HOME `id` "quoted" \\ *', '-starts-with-a-dash', 'tab\there', 'new\nline'];
  for (const value of values) {
    const word = shellWord(value);
    t.same(execFileSync('sh', ['-c', `printf '%s' ${word}`], { encoding: 'utf8' }), value, `${JSON.stringify(value)} as ${word}`);
  }
  t.equal(shellWord('/var/lib/lintel-edge'), '/var/lib/lintel-edge', 'a plain path reads as before');
});

t.test('a building refused: the printed keys-cli bind names a building id with a space as one argument, and works as printed', async (t) => {
  const h = await startHarness(t);
  const dir = join(t.testdir({}), 'site one');
  mkdirSync(join(dir, 'state'), { recursive: true, mode: 0o700 });
  const keyId = 'gw-amsterdam';
  writeFileSync(join(dir, 'ingest.key'), `${await h.keys.add(keyId, ['another-building'], 'bound to another building')}\n`, { mode: 0o600 });
  const config = writeConfig(dir, { buildingId: 'HQ Amsterdam', apPort: await freePort(), ingestUrl: `${h.url}/ingest`, keyId });

  const refused = await runDoctor(config);
  t.comment(refused.stdout);
  t.equal(refused.code, 1, 'a problem');
  const bind = printedCommand(refused.stdout, 'on the telemetry service: ', ' (naming its other buildings too');
  t.same(shellSplit(bind), ['keys-cli.ts', 'bind', keyId, '--building', 'HQ Amsterdam'], `split by the shell: ${bind}`);

  // Run as printed, by the real keys-cli on the service's database.
  const databaseUrl = h.pool.options.connectionString;
  t.ok(databaseUrl, 'the service’s database URL');
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: databaseUrl };
  delete env.NODE_OPTIONS;
  const printed = execFileSync('sh', ['-c', `exec ${shellWord(process.execPath)} --import tsx cloud/telemetry/${bind}`], { cwd: REPO, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  t.match(printed, `${keyId} may write: HQ Amsterdam`, 'keys-cli took the command');

  const passed = await runDoctor(config);
  t.match(passed.stdout, /ok {3}ingest .*: reachable ✓ {2}signature accepted ✓ {2}building "HQ Amsterdam" accepted ✓/, 'and the building now passes');
});

t.test('another user’s state directory: the printed runuser line keeps a path with a space as one argument', async (t) => {
  t.equal(process.geteuid?.(), 0, 'the tests run as root, as `sudo lintel-edge doctor` does');
  const dir = join(t.testdir({}), 'site one');
  const state = join(dir, 'state');
  mkdirSync(state, { recursive: true, mode: 0o700 });
  chownSync(state, NOBODY, NOBODY);
  writeFileSync(join(dir, 'ingest.key'), 'unused-key\n', { mode: 0o600 });
  const config = writeConfig(dir, { buildingId: 'HQ Amsterdam', apPort: await freePort(), ingestUrl: 'http://127.0.0.1:9/ingest', keyId: 'gw-amsterdam' });

  const { code, stdout } = await runDoctor(config);
  t.comment(stdout);
  t.equal(code, 1, 'a problem');
  const runAs = printedCommand(stdout, 'Run doctor as its owner: ', ' (nothing in it was read or written)');
  t.same(
    shellSplit(runAs),
    ['runuser', '-u', 'nobody', '--', 'env', `STATE_DIRECTORY=${state}`, 'lintel-edge', 'doctor', '--config', config],
    `split by the shell: ${runAs}`,
  );
});
