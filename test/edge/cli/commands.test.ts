/**
 * The command line's surface: version, usage errors, config errors, the ledger commands, and a short
 * `simulate` run from the shell.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from './building-config.js';

t.test('version names the build, the runtime and SQLite', async (t) => {
  const { code, stdout } = await runCli(['version']);
  t.equal(code, 0);
  t.match(stdout, /^lintel-edge \d+\.\d+\.\d+ \(node v\d+\.\d+\.\d+, linux-x64, sqlite 3\.\d+\.\d+\)\n$/);
});

t.test('version --verbose shows the runtime: NODE_OPTIONS and the V8 heap limit they give', async (t) => {
  const bounded = await runCli(['version', '--verbose'], { NODE_OPTIONS: '--max-old-space-size=48 --max-semi-space-size=2' });
  t.equal(bounded.code, 0);
  const lines = bounded.stdout.trimEnd().split('\n');
  t.match(lines[0], /^lintel-edge \d+\.\d+\.\d+ \(node /);
  t.match(lines[1], /^executable: node script \(/, 'not the single executable here');
  t.match(lines[2], /^NODE_OPTIONS: .*--max-old-space-size=48/);
  t.equal(lines[3], 'heap limit: 54 MB', 'old space 48 MB plus three 2 MB semi-spaces');
  t.match(lines[4], /^rss: \d+\.\d MB$/);
});

t.test('usage errors exit 2 and say what is wrong', async (t) => {
  const cases: Array<[string[], RegExp]> = [
    [['frobnicate'], /unknown command "frobnicate"/],
    [['run'], /run needs --config <file>/],
    [['run', '--config', 'x', '--frozen-polls', '0'], /--frozen-polls: expected an integer of at least 1, got "0"/],
    [['ledger'], /ledger needs an action: verify, audit or export/],
    [['ledger', 'verify', '--ledger', 'a', '--state-dir', 'b'], /give only one of --ledger, --state-dir, --config/],
    [['simulate', '--ingest', 'http://127.0.0.1:1/ingest'], /--ingest needs --ingest-secret-file <file>/],
    [['simulate', '--ingest', 'ftp://x'], /--ingest: expected an http:\/\/ or https:\/\/ URL/],
    [['simulate', '--reboot-rate', '2'], /--reboot-rate: expected a fraction between 0 and 1, got "2"/],
    [['simulate', '--colour'], /Unknown option '--colour'/],
    [['simulate', '--pace', 'sprint'], /--pace: expected lively or realistic, got "sprint"/],
    [['simulate', '--aps', '2'], /--aps: 2 access points cannot cover 3 zones/],
    [['simulate', '--dialects', 'fritzbox'], /--dialects: unknown dialect\(s\) fritzbox \(known: aruba-aos,/],
    [['simulate', '--dialects', ','], /--dialects: name at least one dialect/],
    [['version', 'extra'], /unexpected argument "extra"/],
    [['simulate', '20'], /unexpected argument "20"/],
    [['doctor', '--config', 'x', 'y.yaml'], /unexpected argument "y.yaml"/],
  ];
  for (const [args, message] of cases) {
    const { code, stderr } = await runCli(args);
    t.equal(code, 2, args.join(' '));
    t.match(stderr, message);
  }
  const help = await runCli(['help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /lintel-edge run --config <file>/);
  const bare = await runCli([]);
  t.equal(bare.code, 2, 'no command is bad usage');
  t.match(bare.stderr, /lintel-edge run --config <file>/, 'its usage goes to stderr');
  t.equal(bare.stdout, '', 'and nothing to stdout, which a pipe reads');
});

t.test('an invalid config lists every problem and exits 2', async (t) => {
  const dir = t.testdir({ 'config.yaml': 'buildingId: hq\npollIntervalS: 2\nrequestTimeoutS: 3\nzones: {}\naccessPoints:\n  - name: ap1\n    host: ""\n' });
  const { code, stderr } = await runCli(['run', '--config', join(dir, 'config.yaml')]);
  t.equal(code, 2);
  t.match(stderr, /invalid configuration in .*config\.yaml:/);
  t.match(stderr, /requestTimeoutS: expected at most pollIntervalS \(2\), got 3/);
  t.match(stderr, /accessPoints\[0\]\.host: expected a hostname, got ""/);
  t.match(stderr, /accessPoints\[0\]\.dialect: expected a string, got nothing/);
  t.match(stderr, /zones: expected at least one zone/);
});

t.test('ledger commands refuse a missing or foreign file', async (t) => {
  const dir = t.testdir({ 'not-a-ledger.sqlite': 'hello' });
  const missing = await runCli(['ledger', 'verify', '--state-dir', dir]);
  t.equal(missing.code, 2);
  t.match(missing.stderr, /no ledger at .*ledger\.sqlite/);
  const foreign = await runCli(['ledger', 'audit', '--ledger', join(dir, 'not-a-ledger.sqlite')]);
  t.equal(foreign.code, 2);
  t.match(foreign.stderr, /is not a readable lintel-edge ledger/);
});

t.test('ledger commands find the ledger from a config file without reading its secrets or checking its APs', async (t) => {
  const dir = t.testdir({});
  const state = join(dir, 'state');
  const sim = await runCli(['simulate', '--ticks', '2', '--interval-ms', '300', '--seed', '4', '--state-dir', state, '--output', 'json']);
  t.equal(sim.code, 0, sim.stderr);
  // The secret files it names are not there (an auditor's copy of the config), and its AP is broken.
  writeFileSync(
    join(dir, 'config.yaml'),
    'buildingId: hq\nstateDir: state\nzones: { lobby: {} }\naccessPoints:\n  - { name: a1, zone: lobby, dialect: nope, transport: snmp, host: 10.0.0.5, snmp: { version: 2c, communityFile: /nowhere/community } }\n',
  );
  const verified = await runCli(['ledger', 'verify', '--config', join(dir, 'config.yaml')]);
  t.equal(verified.code, 0, verified.stderr);
  const bad = await runCli(['ledger', 'verify', '--config', join(dir, 'missing.yaml')]);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /cannot find the state directory in .*missing\.yaml:\n {2}.*cannot read the config file \(ENOENT\)/);
});

t.test('a short simulate from the shell keeps its ledger, which verifies and audits', async (t) => {
  const dir = t.testdir({});
  const run = await runCli(['simulate', '--ticks', '3', '--interval-ms', '500', '--seed', '9', '--state-dir', dir, '--output', 'json']);
  t.equal(run.code, 0, run.stderr);
  const lines = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  t.equal(lines.filter((l) => 'tick' in l).length, 3);
  t.match(lines.at(-1), { summary: { ticks: 3, deliveries: { kept: 3 }, ledgerHead: { seq: 3 } } });
  const verify = await runCli(['ledger', 'verify', '--state-dir', dir]);
  t.equal(verify.code, 0);
  t.match(verify.stdout, /3 entries, chain intact from the start to seq 3/);
  const audit = await runCli(['ledger', 'audit', '--state-dir', dir]);
  t.equal(audit.code, 0);
  const exported = await runCli(['ledger', 'export', '--state-dir', dir, '--from-seq', '2']);
  t.same(exported.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { seq: number }).seq), [2, 3]);

  const lines2 = await runCli(['simulate', '--ticks', '2', '--interval-ms', '300', '--seed', '9', '--output', 'lines']);
  t.equal(lines2.code, 0);
  t.match(lines2.stdout, /^tick 1 {2}zone-a \d+\/\d+/m);
  t.match(lines2.stdout, /state removed \(run with --state-dir/);
});

t.test('simulate --ingest refuses a URL with a password, without echoing it', async (t) => {
  const dir = t.testdir({ 'ingest.key': 'k' });
  const run = await runCli(['simulate', '--ingest', 'http://gw:s3cret-pw@127.0.0.1:1/ingest', '--ingest-secret-file', join(dir, 'ingest.key'), '--ticks', '1', '--interval-ms', '300', '--output', 'table']);
  t.equal(run.code, 2, run.stdout);
  t.match(run.stderr, /--ingest: a URL with a user or password is refused/);
  t.notOk(`${run.stdout}${run.stderr}`.includes('s3cret-pw'), 'the password is not printed');
});
