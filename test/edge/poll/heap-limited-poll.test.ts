/**
 * What APs may answer, against the heap the collector really has: each tick runs in a child process with
 * the NODE_OPTIONS of the systemd unit (a 64 MB old space), polling the real sshd and snmpd. Hostile
 * answers within the limits the poller used to accept (4 MiB of SSH output, 100,000 SNMP values per column)
 * fail their AP with bad_output and the process lives on; the output of a busy AP still reads.
 */
import t from 'tap';
import { startControllers, wlcAccessPoint, wlcRecording } from './support/wlc-recording.js';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUILTIN_DIALECT_DIR } from '../../../edge/src/poll/dialects.js';
import { MAX_SSH_OUTPUT_BYTES, MAX_STATIONS_PER_AP } from '../../../edge/src/poll/limits.js';
import type { AccessPoint } from '../../../edge/src/poll/types.js';
import { recording } from '../../support/peers/snmpd.js';
import { startSshd } from '../../support/peers/sshd.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CHILD = fileURLToPath(new URL('./support/heap-limited-poll.ts', import.meta.url));
const UNIT = join(ROOT, 'edge/systemd/lintel-edge.service');
const OLD_OUTPUT_LIMIT = 4 * 1024 * 1024;
const BUSY_AP_STATIONS = 500;

/** The NODE_OPTIONS the systemd unit starts the collector with. */
function unitNodeOptions(): string {
  const options = /NODE_OPTIONS=([^"]+)"/.exec(readFileSync(UNIT, 'utf8'))?.[1];
  if (!options?.includes('--max-old-space-size')) throw new Error(`${UNIT}: no NODE_OPTIONS with --max-old-space-size`);
  return options;
}

interface ChildResult {
  ap: string;
  ok: boolean;
  stations?: number;
  reason?: string;
  error?: string;
}

/** Polls `aps` once in a child process under the unit's heap; its exit and what it printed. */
async function pollUnderUnitHeap(dir: string, input: { aps: AccessPoint[]; timeoutMs: number; dialectFiles?: Record<string, string> }) {
  const file = join(dir, 'input.json');
  writeFileSync(file, JSON.stringify(input), { mode: 0o600 });
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, file], {
    cwd: ROOT,
    env: { ...process.env, NODE_OPTIONS: unitNodeOptions() },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('close', (c, s) => resolve([c, s])));
  const printed = stdout.trim() === '' ? undefined : (JSON.parse(stdout) as { heapLimitBytes: number; results: ChildResult[] });
  return { code, signal, stderr: stderr.slice(-2000), heapLimitBytes: printed?.heapLimitBytes, results: printed?.results ?? [] };
}

const macOf = (i: number) => `02:00:${[(i >> 16) & 255, (i >> 8) & 255, i & 255, 1].map((b) => b.toString(16).padStart(2, '0')).join(':')}`;

/** A hostile mca-dump: one station table of empty objects, `bytes` long. */
function emptyObjectsDocument(bytes: number): string {
  const head = '{"vap_table":[{"sta_table":[';
  const tail = '{}]}]}';
  return `${head}${'{},'.repeat(Math.floor((bytes - head.length - tail.length) / 3))}${tail}`;
}

/** The mca-dump of a busy UniFi AP: the recorded one, its first radio carrying all `stations` clients, ~1.2 KiB each. */
function busyMcaDump(stations: number): string {
  const dump = JSON.parse(readFileSync(recording('unifi-mca-dump.json'), 'utf8')) as { vap_table: Array<{ sta_table: Array<Record<string, unknown>> }> };
  const sample = dump.vap_table[0]?.sta_table[0] ?? {};
  const counters = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`stat_counter_${i}`, 1_000_000 + i]));
  dump.vap_table.forEach((vap, i) => {
    vap.sta_table = i > 0 ? [] : Array.from({ length: stations }, (_, j) => ({ ...sample, ...counters, mac: macOf(j), signal: -40 - (j % 50) }));
  });
  return JSON.stringify(dump);
}

/** The iw station dump of a busy OpenWrt AP: the recorded first station's block, once per station. */
function busyIwDump(stations: number): string {
  const recorded = readFileSync(recording('openwrt-iw-phy0-ap0.txt'), 'utf8');
  const block = recorded.slice(0, recorded.indexOf('Station', 1));
  return Array.from({ length: stations }, (_, i) => block.replace('04:d3:b0:12:34:56', macOf(i))).join('');
}

t.test('SSH: hostile output within the old limits fails its AP under the unit heap; a busy AP still reads', async (t) => {
  const dir = t.testdir({});
  const files: Record<string, string> = {
    'objects-4m': emptyObjectsDocument(OLD_OUTPUT_LIMIT - 1024),
    'objects-1m': emptyObjectsDocument(MAX_SSH_OUTPUT_BYTES - 1024),
    'mca-busy': busyMcaDump(BUSY_AP_STATIONS),
    'newlines-4m': '\n'.repeat(OLD_OUTPUT_LIMIT - 1024),
    'newlines-1m': '\n'.repeat(MAX_SSH_OUTPUT_BYTES - 1024),
    'stations-20k': Array.from({ length: 20_000 }, (_, i) => `Station ${macOf(i)} (on w0)\n\tsignal: -50\n`).join(''),
    'iw-busy': busyIwDump(BUSY_AP_STATIONS),
    'clients-30k': `{"clients":{${Array.from({ length: 30_000 }, (_, i) => `"${macOf(i)}":{}`).join(',')}}}`,
  };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  t.ok(Buffer.byteLength(files['mca-busy']!) > 500 * 1024 && Buffer.byteLength(files['mca-busy']!) < MAX_SSH_OUTPUT_BYTES, 'the busy UniFi AP prints over 500 KiB');
  t.ok(Buffer.byteLength(files['iw-busy']!) > 300 * 1024, 'the busy OpenWrt AP prints over 300 KiB');

  const commandOf = (name: string) => (name.startsWith('objects') || name.startsWith('mca') ? `mca-dump ${name}` : name.startsWith('clients') ? `ubus call hostapd.${name} get_clients` : `iw dev ${name} station dump`);
  const sshd = await startSshd({ commands: Object.fromEntries(Object.keys(files).map((name) => [commandOf(name), { stdoutFile: join(dir, name) }])) });
  t.teardown(() => sshd.stop());
  // UniFi's dialect with the file to print as its interface, so one sshd can play several UniFi APs
  const unifi = JSON.parse(readFileSync(join(BUILTIN_DIALECT_DIR, 'unifi.json'), 'utf8')) as Record<string, unknown>;
  const dialectFiles = { 'unifi-test.json': JSON.stringify({ ...unifi, name: 'unifi-test', command: 'mca-dump {if}' }) };
  const dialectOf = (name: string) => (name.startsWith('objects') || name.startsWith('mca') ? 'unifi-test' : name.startsWith('clients') ? 'openwrt-ubus' : 'openwrt-iw');
  const aps: AccessPoint[] = Object.keys(files).map((name) => ({
    name,
    zone: 'lab',
    dialect: dialectOf(name),
    target: { transport: 'ssh', host: sshd.host, port: sshd.port, username: sshd.username, privateKey: sshd.clientPrivateKey, interface: name },
  }));

  const child = await pollUnderUnitHeap(dir, { aps, timeoutMs: 30_000, dialectFiles });
  t.same({ code: child.code, signal: child.signal }, { code: 0, signal: null }, `the process survives the tick${child.code === 0 ? '' : `: ${child.stderr}`}`);
  t.ok(child.heapLimitBytes !== undefined && child.heapLimitBytes < 80 * 1024 * 1024, 'it ran under the unit heap limit');
  const byAp = Object.fromEntries(child.results.map(({ ap, ...rest }) => [ap, rest]));
  const tooLarge = { ok: false, reason: 'bad_output', error: `output larger than ${MAX_SSH_OUTPUT_BYTES} bytes` };
  t.same(byAp['objects-4m'], tooLarge);
  t.match(byAp['objects-1m'], { ok: false, reason: 'bad_output', error: /^mca-dump: more than \d+ objects and arrays \(\d+\); no AP lists that many stations$/ });
  t.same(byAp['newlines-4m'], tooLarge);
  t.same(byAp['newlines-1m'], { ok: true, stations: 0 }, 'blank lines are an AP with nobody on it, read line by line');
  t.same(byAp['stations-20k'], { ok: false, reason: 'bad_output', error: `more than ${MAX_STATIONS_PER_AP} stations listed (20000); no AP carries that many` });
  t.same(byAp['clients-30k'], { ok: false, reason: 'bad_output', error: `more than ${MAX_STATIONS_PER_AP} stations listed (30000); no AP carries that many` });
  t.same(byAp['mca-busy'], { ok: true, stations: BUSY_AP_STATIONS });
  t.same(byAp['iw-busy'], { ok: true, stations: BUSY_AP_STATIONS });
});

t.test('SNMP: a controller answering more values than the heap holds fails under the unit heap; a busy one still reads', async (t) => {
  const dir = t.testdir({});
  // 40,000 rows of three columns: 120,000 values, each column within the old 100,000 a column
  writeFileSync(join(dir, 'wlc-huge.snmpwalk'), wlcRecording(40_000));
  // the busy one: its one AP carrying as many stations as an AP may list
  writeFileSync(join(dir, 'wlc-busy.snmpwalk'), wlcRecording(MAX_STATIONS_PER_AP));
  const [huge, busy] = await startControllers(join(dir, 'wlc-huge.snmpwalk'), join(dir, 'wlc-busy.snmpwalk'));
  t.teardown(() => Promise.all([huge.stop(), busy.stop()]));

  const child = await pollUnderUnitHeap(dir, { aps: [wlcAccessPoint('huge', huge.port), wlcAccessPoint('busy', busy.port)], timeoutMs: 60_000 });
  t.same({ code: child.code, signal: child.signal }, { code: 0, signal: null }, `the process survives the tick${child.code === 0 ? '' : `: ${child.stderr}`}`);
  t.match(child.results, [
    { ap: 'AP-Lobby-1', ok: false, reason: 'bad_output', error: /^the SNMP answers of this poll passed \d+ values \(all access points, tables and columns together\), and this one held the most$/ },
    { ap: 'AP-Lobby-1', ok: true, stations: MAX_STATIONS_PER_AP },
  ]);
});
