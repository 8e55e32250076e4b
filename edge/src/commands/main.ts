/**
 * lintel-edge's command line: parsing and dispatch. Each command module is the composition root of what
 * it runs. The entry point is cli.ts.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { join, resolve } from 'node:path';
import { KEY_ID } from '../../../shared/hmac.js';
import { isCacheDirectoryRefusal } from './cache-directory.js';
import { openProcessIo, defaultStateDir, type CommandIo } from './common.js';
import { VERSION } from '../version.js';
import { stateDirOf } from '../config/index.js';
import { DevicesPerPerson } from '../config/codecs.js';
import { loadDialects } from '../poll/dialects.js';
import type { TemporaryState } from './simulate.js';

const USAGE = `lintel-edge ${VERSION}: count people by zone from a building's Wi-Fi access points.

Usage:
  lintel-edge run --config <file> [--frozen-polls <n>]
      Run the collector until SIGTERM/SIGINT. SIGHUP (systemctl reload) re-reads the config between two
      ticks: access points, zones, intervals, tracker, ingest, log level; an invalid file is logged and
      changes nothing; stateDir and metrics.listen need a restart.
  lintel-edge simulate [options]
      A simulated building (real SNMP agents and SSH servers on loopback) with a live table of zone counts
      against the ground truth. Ctrl-C (or a hangup) ends it after the tick in flight; a second one ends
      it at once. Either way a temporary state directory is removed (--state-dir keeps it), but for the
      ledger of the batches posted with --ingest: that is kept in a lintel-edge-ledger-* directory under
      $TMPDIR: the first line says where, the last prints its path with the ledger verify command.
      The device key and the building's SSH and SNMP secrets are removed all the same. Options:
        --aps <n>                 access points (default 6)
        --devices <n>             devices walking around (default 40)
        --zones <n>               zones (default 3)
        --seed <n>                deterministic randomness
        --reboot-rate <x>         fraction of steps in which some AP reboots (default 0.02)
        --pace lively|realistic   lively (default): people stay 3-10 ticks, then mostly walk to another
                                  zone, so moves show within seconds; realistic: they stay 5-40 ticks
        --dialects <a,b,...>      AP dialects to serve (default: a mix of SNMP and SSH)
        --interval-ms <ms>        tick interval (default 1000)
        --ticks <n>               stop after n ticks (default: run until Ctrl-C)
        --ingest <url>            post batches here (default: keep them in the ledger only)
        --ingest-secret-file <f>  the HMAC key for --ingest (required with it)
        --key-id <id>             sent as X-Key-Id: 1 to 128 letters, digits, ".", "_", ":" or "-"
        --ingest-timeout-ms <ms>  how long a post may take; a stop waits for the one in flight up to
                                  it (default: the interval, from 1000 to 5000)
        --devices-per-person <x>  for ratioDeviceCount, 1 or more (default 1.5)
        --state-dir <dir>         keep the state and ledger here (default: a temporary directory)
        --frozen-polls <n>        polls a device behind a silent AP is kept (default 30)
        --output table|lines|json how to show ticks (default: table on a terminal, else lines)
  lintel-edge doctor --config <file>
      Check every AP (reachable, authenticated, walkable, stations), the ingest (signed probe), the clock
      and the state. Exits 1 on any failure.
  lintel-edge ledger verify|audit|export [--config <file> | --state-dir <dir> | --ledger <file>] [--from-seq <n>]
      verify: the hash chain is intact. audit: every exported byte is an aggregate (exits 1 on a finding).
      export: the entries as JSON lines, each with its delivery: accepted, rejected, unreachable, kept (no
      ingest), interrupted (the gateway stopped before the post's outcome was known), or null (in flight).
  lintel-edge action --config <file> --list
  lintel-edge action --config <file> --sensor <id> --action <name> [--arg name=value ...]
      Drive a building device listed under sensors: in the config (e.g. a thermostat's setTarget),
      through its driver's bindings. Exit 0 when the device accepted the command.
  lintel-edge version [--verbose]
      --verbose adds the runtime: single executable or not, NODE_OPTIONS, the V8 heap limit, RSS.

Exit codes: 0 success, 1 a check failed, 2 bad usage or configuration (a refused cache directory too).
`;

class UsageError extends Error {}

type Values = Record<string, string | boolean | string[] | undefined>;

/**
 * Parses a command's options. Arguments beyond `maxPositionals` are refused: dropped, a forgotten
 * `--arg` (`action … increase step=3`) would send the command without it. So is an option of one value
 * given twice: parseArgs keeps the last, and `action --sensor stat-lobby --sensor stat-cafe` drove the
 * café's thermostat without a word.
 */
function parse(args: string[], options: ParseArgsConfig['options'], maxPositionals = 0): { values: Values; positionals: string[] } {
  const all: NonNullable<ParseArgsConfig['options']> = { ...options, help: { type: 'boolean', short: 'h' } };
  let parsed;
  try {
    parsed = parseArgs({ args, options: all, allowPositionals: true, strict: true, tokens: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals, tokens } = parsed;
  const seen = new Set<string>();
  for (const token of tokens) {
    if (token.kind !== 'option' || all[token.name]?.multiple === true) continue;
    if (seen.has(token.name)) throw new UsageError(`--${token.name} is given more than once; give it once`);
    seen.add(token.name);
  }
  if (positionals.length > maxPositionals) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[maxPositionals])}`);
  return { values: values as Values, positionals };
}

function integer(values: Values, name: string, min = 1, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  const expected = max === Number.MAX_SAFE_INTEGER ? `an integer of at least ${min}` : `an integer from ${min} to ${max}`;
  if (typeof raw !== 'string' || !/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || n > max) throw new UsageError(`--${name}: expected ${expected}, got ${JSON.stringify(raw)}`);
  return n;
}

/** Node's longest timer, in ms: a longer one fires at once. */
const MAX_TIMER_MS = 2_147_483_647;

function number(values: Values, name: string, check: (n: number) => boolean, expected: string): number | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (typeof raw !== 'string' || raw.trim() === '' || !Number.isFinite(n) || !check(n)) throw new UsageError(`--${name}: expected ${expected}, got ${JSON.stringify(raw)}`);
  return n;
}

/**
 * `--devices-per-person` by the config's own rule (DevicesPerPerson: 1 or more), refused in its words:
 * simulate can post to a real ingest, where a factor below 1 reads one device as more than one person.
 */
function devicesPerPerson(values: Values): number | undefined {
  const raw = values['devices-per-person'];
  if (raw === undefined) return undefined;
  const n = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : Number.NaN;
  const name = '--devices-per-person';
  const decoded = DevicesPerPerson.validate(n, [
    { key: '', type: DevicesPerPerson, actual: n },
    { key: name, type: DevicesPerPerson, actual: n },
  ]);
  if (decoded._tag === 'Right') return decoded.right;
  throw new UsageError(decoded.left[0]?.message ?? `${name}: expected ${DevicesPerPerson.name}, got ${JSON.stringify(raw)}`);
}

function required(values: Values, name: string, command: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`${command} needs --${name} <${name === 'config' ? 'file' : 'value'}>`);
  return v;
}

async function runCommand(argv: string[], io: CommandIo): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      // Asked for, the usage is the answer (stdout, 0); without a command it is an error (stderr, 2).
      if (command === undefined) {
        io.err(USAGE);
        return 2;
      }
      io.out(USAGE);
      return 0;
    case 'version':
    case '--version': {
      const { values } = parse(rest, { verbose: { type: 'boolean', short: 'v' } });
      if (values.help) return help(io);
      const { describeVersion } = await import('./version.js');
      io.out(`${describeVersion({ verbose: values.verbose === true })}\n`);
      return 0;
    }
    case 'run': {
      const { values } = parse(rest, { config: { type: 'string', short: 'c' }, 'frozen-polls': { type: 'string' } });
      if (values.help) return help(io);
      const { runCollector } = await import('./run.js');
      const frozenPolls = integer(values, 'frozen-polls');
      return runCollector({ config: required(values, 'config', 'run'), ...(frozenPolls !== undefined ? { frozenPolls } : {}) }, io);
    }
    case 'doctor': {
      const { values } = parse(rest, { config: { type: 'string', short: 'c' } });
      if (values.help) return help(io);
      const { doctor } = await import('./doctor.js');
      return doctor({ config: required(values, 'config', 'doctor') }, io);
    }
    case 'ledger': {
      const { values, positionals } = parse(rest, {
        config: { type: 'string', short: 'c' },
        'state-dir': { type: 'string' },
        ledger: { type: 'string' },
        'from-seq': { type: 'string' },
      }, 1);
      if (values.help) return help(io);
      const action = positionals[0];
      if (action !== 'verify' && action !== 'audit' && action !== 'export') throw new UsageError('ledger needs an action: verify, audit or export');
      const path = ledgerPath(values, io);
      if (!path) return 2;
      const { ledgerCommand } = await import('./ledger.js');
      const fromSeq = integer(values, 'from-seq', 0);
      return ledgerCommand(action, path, io, fromSeq !== undefined ? { fromSeq } : {});
    }
    case 'simulate':
      return simulateCommand(rest, io);
    case 'action': {
      const { values } = parse(rest, {
        config: { type: 'string', short: 'c' },
        list: { type: 'boolean' },
        sensor: { type: 'string' },
        action: { type: 'string' },
        arg: { type: 'string', multiple: true },
      });
      if (values.help) return help(io);
      const args = (values as Record<string, unknown>).arg as string[] | undefined;
      if (values.list === true) {
        // --list only lists: a command given with it would otherwise be silently not sent.
        const commandOptions = ['sensor', 'action', 'arg'].filter((k) => values[k] !== undefined);
        if (commandOptions.length > 0) throw new UsageError(`action --list takes no ${commandOptions.map((k) => `--${k}`).join(', ')}; list, or send a command, not both`);
      }
      const { actionCommand } = await import('./action.js');
      return actionCommand(
        {
          config: required(values, 'config', 'action'),
          list: values.list === true,
          ...(typeof values.sensor === 'string' ? { sensor: values.sensor } : {}),
          ...(typeof values.action === 'string' ? { action: values.action } : {}),
          args: args ?? [],
        },
        io,
      );
    }
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
}

function help(io: CommandIo): number {
  io.out(USAGE);
  return 0;
}

/** The ledger file named by --ledger, --state-dir or --config (its stateDir), else the default state dir. */
function ledgerPath(values: Values, io: CommandIo): string | undefined {
  const given = ['ledger', 'state-dir', 'config'].filter((k) => values[k] !== undefined);
  if (given.length > 1) throw new UsageError(`give only one of --ledger, --state-dir, --config (got ${given.map((g) => `--${g}`).join(', ')})`);
  if (typeof values.ledger === 'string') return resolve(values.ledger);
  if (typeof values['state-dir'] === 'string') return join(resolve(values['state-dir']), 'ledger.sqlite');
  if (typeof values.config === 'string') {
    // Only its stateDir: the ledger commands read no secret and need no working AP config.
    const found = stateDirOf(values.config.replace(/^~(?=\/)/, homedir()), defaultStateDir());
    if (!found.ok) {
      io.err(`lintel-edge: cannot find the state directory in ${values.config}:\n  ${found.errors.join('\n  ')}\n`);
      return undefined;
    }
    return join(found.stateDir, 'ledger.sqlite');
  }
  return join(defaultStateDir(), 'ledger.sqlite');
}

async function simulateCommand(args: string[], io: CommandIo): Promise<number> {
  const { values } = parse(args, {
    aps: { type: 'string' },
    devices: { type: 'string' },
    zones: { type: 'string' },
    seed: { type: 'string' },
    'reboot-rate': { type: 'string' },
    dialects: { type: 'string' },
    'interval-ms': { type: 'string' },
    ticks: { type: 'string' },
    ingest: { type: 'string' },
    'ingest-secret-file': { type: 'string' },
    'key-id': { type: 'string' },
    'ingest-timeout-ms': { type: 'string' },
    'devices-per-person': { type: 'string' },
    'state-dir': { type: 'string' },
    'frozen-polls': { type: 'string' },
    pace: { type: 'string' },
    output: { type: 'string' },
  });
  if (values.help) return help(io);
  const pace = values.pace ?? 'lively';
  if (pace !== 'lively' && pace !== 'realistic') throw new UsageError(`--pace: expected lively or realistic, got ${JSON.stringify(pace)}`);
  const output = values.output ?? (io.isTty ? 'table' : 'lines');
  if (output !== 'table' && output !== 'lines' && output !== 'json') throw new UsageError(`--output: expected table, lines or json, got ${JSON.stringify(output)}`);
  let ingest: { url: string; secret: string; keyId?: string } | undefined;
  if (typeof values.ingest === 'string') {
    let url: URL;
    try {
      url = new URL(values.ingest);
    } catch {
      throw new UsageError(`--ingest: expected an http:// or https:// URL, got ${JSON.stringify(values.ingest)}`);
    }
    // Not echoed: the password is an inline secret, and the URL is shown on every tick.
    if (url.username !== '' || url.password !== '') throw new UsageError('--ingest: a URL with a user or password is refused (the key goes in --ingest-secret-file)');
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--ingest: expected an http:// or https:// URL, got ${JSON.stringify(values.ingest)}`);
    const secretFile = values['ingest-secret-file'];
    if (typeof secretFile !== 'string') throw new UsageError('--ingest needs --ingest-secret-file <file> (the HMAC key; secrets are never given inline)');
    let secret: string;
    try {
      secret = readFileSync(secretFile, 'utf8').replace(/\r?\n$/, '');
    } catch (err) {
      throw new UsageError(`--ingest-secret-file: cannot read ${secretFile} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    if (secret === '') throw new UsageError(`--ingest-secret-file: ${secretFile} is empty`);
    const keyId = values['key-id'];
    // The rule telemetry issues key ids by: any other id is refused there, and one holding a control
    // character is a header Node will not send.
    if (typeof keyId === 'string' && !KEY_ID.test(keyId)) throw new UsageError(`--key-id: expected 1 to 128 letters, digits, ".", "_", ":" or "-", got ${JSON.stringify(keyId)}`);
    ingest = { url: url.href, secret, ...(typeof keyId === 'string' ? { keyId } : {}) };
  } else if (values['ingest-secret-file'] !== undefined || values['key-id'] !== undefined || values['ingest-timeout-ms'] !== undefined) {
    throw new UsageError('--ingest-secret-file, --key-id and --ingest-timeout-ms only make sense with --ingest <url>');
  }
  const dialects = typeof values.dialects === 'string' ? values.dialects.split(',').map((d) => d.trim()).filter(Boolean) : undefined;
  const options = {
    intervalMs: integer(values, 'interval-ms', 50) ?? 1000,
    output: output as 'table' | 'lines' | 'json',
    pace: pace as 'lively' | 'realistic',
    ...defined('accessPoints', integer(values, 'aps')),
    ...defined('devices', integer(values, 'devices', 0)),
    ...defined('zones', integer(values, 'zones')),
    ...defined('seed', integer(values, 'seed', 0)),
    ...defined('rebootRate', number(values, 'reboot-rate', (n) => n >= 0 && n <= 1, 'a fraction between 0 and 1')),
    ...defined('ticks', integer(values, 'ticks')),
    ...defined('ingestTimeoutMs', integer(values, 'ingest-timeout-ms', 1, MAX_TIMER_MS)),
    ...defined('frozenPolls', integer(values, 'frozen-polls')),
    ...defined('devicesPerPerson', devicesPerPerson(values)),
    ...defined('stateDir', typeof values['state-dir'] === 'string' ? resolve(values['state-dir']) : undefined),
    ...defined('ingest', ingest),
    ...defined('dialects', dialects),
  };
  // Checked here, so a bad option is bad usage (exit 2) before anything is started or written.
  const zoneCount = options.zones ?? 3;
  const apCount = options.accessPoints ?? 6;
  if (apCount < zoneCount) throw new UsageError(`--aps: ${apCount} access points cannot cover ${zoneCount} zones (one per zone at least)`);
  if (dialects !== undefined) {
    if (dialects.length === 0) throw new UsageError('--dialects: name at least one dialect');
    const known = loadDialects();
    const unknown = dialects.filter((name) => !known.has(name));
    if (unknown.length > 0) throw new UsageError(`--dialects: unknown dialect(s) ${unknown.join(', ')} (known: ${[...known.keys()].sort().join(', ')})`);
  }
  const { simulate } = await import('./simulate.js');
  const stop = new AbortController();
  let temporaryState: TemporaryState | undefined;
  let signalled = false;
  // Ctrl-C, SIGTERM or a terminal hangup ends the run after the tick in flight, which removes the
  // temporary state. A second one does not wait: the state (the device key, the building's SSH private
  // key and SNMP secrets, all but the ledger of the batches posted) is removed now, as the end of the run
  // would, and the process ends. The handlers stay for the whole run: without one, a second signal would
  // take Node's default and end it with the state left.
  const onSignal = (signal: NodeJS.Signals) => {
    if (!signalled) {
      signalled = true;
      io.err(`lintel-edge: ${signal}: stopping after the tick in flight (${signal === 'SIGINT' ? 'Ctrl-C' : 'a signal'} again to stop at once)\n`);
      stop.abort();
      return;
    }
    temporaryState?.removeNow();
    io.err(`lintel-edge: ${signal} while stopping: stopped at once${temporaryState !== undefined ? '; the temporary state was removed' : ''}\n`);
    // 130, as a shell reports a command Ctrl-C ended, whichever signal came second.
    process.exit(130);
  };
  const onGone = () => stop.abort();
  for (const signal of SIMULATE_STOP_SIGNALS) process.on(signal, onSignal);
  // Nobody left to read the table (`simulate | head`): the run ends as on Ctrl-C, and cleans up.
  io.gone?.addEventListener('abort', onGone, { once: true });
  if (io.gone?.aborted) stop.abort();
  try {
    const { exitCode } = await simulate(options, io, {
      signal: stop.signal,
      onTemporaryState: (temporary) => {
        temporaryState = temporary;
      },
    });
    return exitCode;
  } finally {
    for (const signal of SIMULATE_STOP_SIGNALS) process.off(signal, onSignal);
    io.gone?.removeEventListener('abort', onGone);
  }
}

/** What ends a simulation: Ctrl-C, a stop, and the hangup of its terminal. */
const SIMULATE_STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

function defined<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/** Runs the command line; resolves with the exit code. Without `io`, on the process's stdout and stderr. */
export async function main(argv: string[], io: CommandIo = openProcessIo()): Promise<number> {
  try {
    return await runCommand(argv, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`lintel-edge: ${err.message}\nRun lintel-edge help for usage.\n`);
      return 2;
    }
    io.err(`lintel-edge: ${(err as Error).message}\n`);
    // A cache directory the executable refuses stays so until someone fixes it: not a failed check.
    return isCacheDirectoryRefusal(err) ? 2 : 1;
  }
}

