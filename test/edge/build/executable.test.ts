/**
 * The single executable: built offline from the local Node (reused when up to date), it runs `version`
 * (which opens SQLite through the addon it carries), honours the systemd unit's NODE_OPTIONS heap bound,
 * and runs a short `simulate` under that bound, from a directory with no source tree; its ledger verifies
 * and audits. It starts over carried data that systemd-tmpfiles half aged away (no `.complete` marker,
 * some files left), and where a noexec temporary directory refuses its SQLite addon, it says so and how to
 * unpack elsewhere. A cache directory others may write, or another user's, is refused in one line and
 * exit 2: the banner's refusal, met while the dialects' module loaded, once ended every command with a
 * stack trace and exit 1, which the unit restarts for ever.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { heapLimitMbOf, unitEnvironment } from './unit-file.js';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { noexecTmpfs } from '../support/private-mount.js';

const run = promisify(execFile);
const REPO = new URL('../../../', import.meta.url).pathname;
const EXE = join(REPO, 'dist/lintel-edge');

t.test('npm run build:edge gives one executable that runs version and simulate', async (t) => {
  const build = await run('bash', [join(REPO, 'tools/build-edge'), '--if-stale'], { cwd: REPO, timeout: 150_000 });
  t.match(build.stderr, /build-edge: (built dist\/lintel-edge|dist\/lintel-edge is up to date)/);
  t.ok(existsSync(EXE));
  t.ok((statSync(EXE).mode & 0o111) !== 0, 'executable');

  const elsewhere = t.testdir({});
  const cache = join(elsewhere, 'cache');
  mkdirSync(cache, { mode: 0o700 });
  const env = { PATH: '/usr/bin:/bin', CACHE_DIRECTORY: cache, HOME: elsewhere };

  const version = await run(EXE, ['version'], { cwd: elsewhere, env, timeout: 30_000 });
  t.match(version.stdout, /^lintel-edge \d+\.\d+\.\d+ \(node v\d+\.\d+\.\d+, linux-x64, sqlite 3\.\d+\.\d+\)\n$/);
  t.equal(version.stderr, '', 'no warnings');
  t.ok(readdirSync(cache).some((f) => /^better_sqlite3-[0-9a-f]{16}\.node$/.test(f)), 'the SQLite addon was unpacked into the private cache');

  // The systemd unit bounds the heap through NODE_OPTIONS: the executable must honour it.
  const unitEnv = unitEnvironment();
  const nodeOptions = unitEnv.NODE_OPTIONS ?? '';
  const shipped = { ...env, ...unitEnv };
  const bounded = await run(EXE, ['version', '--verbose'], { cwd: elsewhere, env: shipped, timeout: 30_000 });
  t.match(bounded.stdout, /^executable: single executable$/m);
  // (tap rewrites NODE_OPTIONS for the processes a test starts: each option quoted, its own --import added)
  const seen = /^NODE_OPTIONS: (.*)$/m.exec(bounded.stdout)?.[1] ?? '';
  t.ok(nodeOptions.split(/\s+/).every((flag) => seen.includes(flag)), `it sees the unit's NODE_OPTIONS (${seen})`);
  t.ok(bounded.stdout.split('\n').includes(`heap limit: ${heapLimitMbOf(nodeOptions).heapLimitMb} MB`), 'and V8 took the bound');
  const unbounded = await run(EXE, ['version', '--verbose'], { cwd: elsewhere, env, timeout: 30_000 });
  t.notMatch(unbounded.stdout, /max-old-space-size/);
  t.ok(Number(/^heap limit: (\d+) MB$/m.exec(unbounded.stdout)?.[1]) > heapLimitMbOf(nodeOptions).heapLimitMb, 'without it, V8 picks its own, larger limit');

  // The config check reads the carried AP dialects; the action command the carried device bindings.
  writeFileSync(join(elsewhere, 'community'), 'public\n', { mode: 0o600 });
  writeFileSync(
    join(elsewhere, 'config.yaml'),
    `buildingId: hq
pollIntervalS: 10
requestTimeoutS: 5
zones: { lobby: {} }
accessPoints:
  - { name: ap1, zone: lobby, dialect: cisco-wlc, transport: snmp, host: 127.0.0.1, snmp: { version: 2c, communityFile: community }, apZones: { AP-1: lobby } }
sensors:
  - { sensorId: stat-1, zone: lobby, metric: temperature, driver: honeywell-lcc-thermostat, endpoint: "http://127.0.0.1:9" }
`,
  );
  const actions = await run(EXE, ['action', '--config', 'config.yaml', '--list'], { cwd: elsewhere, env });
  t.match(actions.stdout, /^stat-1 {2}temperature in lobby {2}driver honeywell-lcc-thermostat {2}actions: setTarget/);

  const state = join(elsewhere, 'state');
  // openwrt-iw (SSH) and aruba-aos (SNMP v3) only, so both bundled transports must work.
  // under the shipped heap bound
  const sim = await run(EXE, ['simulate', '--ticks', '3', '--interval-ms', '2000', '--seed', '4', '--aps', '4', '--dialects', 'openwrt-iw,aruba-aos', '--state-dir', state, '--output', 'json'], {
    cwd: elsewhere,
    env: shipped,
    timeout: 60_000,
  });
  const lines = sim.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  const ticks = lines.filter((l) => 'tick' in l) as Array<{ aps: Array<{ ap: string; ok: boolean }>; counts: Record<string, number> }>;
  t.equal(ticks.length, 3);
  const answered = new Set(ticks.flatMap((tick) => tick.aps.filter((a) => a.ok).map((a) => a.ap)));
  t.ok(answered.size >= 3, `SSH and SNMP APs answer the bundled poller (${[...answered].join(', ')})`);
  t.ok(Object.values(ticks.at(-1)!.counts).reduce((a, b) => a + b, 0) > 0, 'devices are counted');
  t.match(lines.at(-1), { summary: { ticks: 3, ledgerHead: { seq: 3 } } });
  t.equal(sim.stderr, '', 'no warnings');

  const verify = await run(EXE, ['ledger', 'verify', '--state-dir', state], { cwd: elsewhere, env });
  t.match(verify.stdout, /3 entries, chain intact/);
  const audit = await run(EXE, ['ledger', 'audit', '--state-dir', state], { cwd: elsewhere, env });
  t.match(audit.stdout, /^audit passed: 3 entries/);
});

t.test('the executable over a cache tmpfiles half aged, and on a noexec temporary directory', async (t) => {
  t.ok(existsSync(EXE), 'built above');
  // The data directory's name comes from the digest of the build's inputs, which the build stamps.
  const digest = readFileSync(join(REPO, 'dist/.sea/inputs.sha256'), 'utf8').trim();
  const elsewhere = t.testdir({});

  const cache = join(elsewhere, 'cache');
  const data = join(cache, `data-${digest.slice(0, 16)}`);
  mkdirSync(join(data, 'firmware-bindings'), { recursive: true, mode: 0o700 });
  writeFileSync(join(data, 'firmware-bindings', 'survivor.json'), '{}');
  const version = await run(EXE, ['version'], { cwd: elsewhere, env: { PATH: '/usr/bin:/bin', CACHE_DIRECTORY: cache, HOME: elsewhere }, timeout: 30_000 });
  t.match(version.stdout, /^lintel-edge \d+\.\d+\.\d+ /, 'a data directory without its marker does not stop a command');
  t.ok(existsSync(join(data, '.complete')), 'it was unpacked again, whole');

  const state = join(elsewhere, 'state');
  const ledger = openLedger(join(state, 'ledger.sqlite'));
  ledger.append('{"batchId":"b1","readings":[]}', Date.now());
  ledger.close();
  const tmp = join(elsewhere, 'tmp');
  mkdirSync(tmp, { mode: 0o700 });
  const [command, ...args] = [...noexecTmpfs(tmp), '/usr/bin/env', '-i', 'PATH=/usr/bin:/bin', `TMPDIR=${tmp}`, `HOME=${elsewhere}`, EXE, 'ledger', 'verify', '--state-dir', state];
  const refused = await run(command, args, { cwd: elsewhere, timeout: 30_000 }).then(
    () => ({ code: 0, stderr: '' }),
    (err: { code?: number; stderr?: string }) => ({ code: err.code, stderr: err.stderr ?? '' }),
  );
  t.equal(refused.code, 2, `the ledger cannot be read (stderr: ${refused.stderr.slice(0, 600)})`);
  t.match(refused.stderr, new RegExp(`cannot load the SQLite addon unpacked to ${tmp}/lintel-edge-0/better_sqlite3-[0-9a-f]{16}\\.node \\(.*failed to map segment from shared object\\)`), 'the file and the loader’s words');
  t.match(refused.stderr, `${tmp}/lintel-edge-0 may be on a filesystem mounted noexec`, 'the likely cause');
  t.match(refused.stderr, 'set CACHE_DIRECTORY=/var/cache/lintel-edge', 'and the way out');
});

t.test('a cache directory others may write, or another user owns: one line and exit 2, for every command', async (t) => {
  t.ok(existsSync(EXE), 'built above');
  const elsewhere = t.testdir({});
  const shared = join(elsewhere, 'shared');
  mkdirSync(shared);
  chmodSync(shared, 0o1777);
  const foreign = join(elsewhere, 'foreign');
  mkdirSync(foreign, { mode: 0o700 });
  chownSync(foreign, 65534, 65534);
  const commands = [
    ['ledger', 'verify', '--ledger', join(elsewhere, 'nonexistent.sqlite')],
    ['run', '--config', join(elsewhere, 'config.yaml')],
  ];
  for (const [cache, whose] of [[shared, 'a cache directory others may write'], [foreign, 'another user’s cache directory']] as const) {
    for (const args of commands) {
      const what = `${args.slice(0, 2).join(' ')} over ${whose}`;
      const ended = await run(EXE, args, { cwd: elsewhere, env: { PATH: '/usr/bin:/bin', CACHE_DIRECTORY: cache, HOME: elsewhere }, timeout: 30_000 }).then(
        () => ({ code: 0, stderr: '' }),
        (err: { code?: number; stderr?: string }) => ({ code: err.code, stderr: err.stderr ?? '' }),
      );
      t.equal(ended.code, 2, `${what}: exit 2, which the unit does not restart (stderr: ${ended.stderr.slice(0, 600)})`);
      t.equal(
        ended.stderr,
        `lintel-edge: refusing to unpack data into ${cache}: it must be a directory owned by this user and writable by no one else; ` +
          'unpack it elsewhere: set CACHE_DIRECTORY=/var/cache/lintel-edge (as the unit does; a directory this user owns, mode 700)\n',
        `${what}: one line, no stack trace`,
      );
    }
  }
  t.same(readdirSync(shared), [], 'nothing was unpacked into the shared directory');
});
