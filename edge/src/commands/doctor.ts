/**
 * `lintel-edge doctor --config <yaml>`: what an installer checks before leaving the building. For each AP:
 * reachable, authenticated, walkable, and its station count; for the ingest: reachable, and a signed probe
 * batch taken past the signature and the key's buildings (one reading too old to store: see
 * ingest-probe.ts); the clock; the state directory and the ledger. Exits 1 on any failure.
 * The state passes only as the collector will take it: a device key this user can read and of the length
 * the collector requires, and state files (zones.sqlite, ledger.sqlite, their -wal and -shm) this user may
 * write; each of these the collector would refuse at start (exit 2) is a FAIL naming the file's owner.
 * Run it as the state directory's owner (the service user): in another user's state directory it reads
 * and writes nothing, and says what to do: run by root (or anyone) in the service user's, whom to run as;
 * run by the service user in root's (made with mkdir, not the install step) or another's, the install
 * step that makes it the service user's. Run as root where the state directory does not exist yet, it
 * creates nothing, and names that install step. The commands it prints quote their values for the shell.
 */
import { accessSync, constants, existsSync, lstatSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { createPoller } from '../poll/index.js';
import type { AccessPoint, ApPollResult, Poller } from '../poll/types.js';
import { redactIdentifiers } from '../report/identifiers.js';
import { openLedger } from '../report/ledger.js';
import type { EdgeConfig } from '../config/load.js';
import { createLocalDevices, unknownDrivers } from '../actions/index.js';
import { loadShippedBindings } from './action.js';
import { loadCheckedConfig, type CommandIo } from './common.js';
import { probeBody, probeVerdict, sendProbe, type ProbeAnswer } from './ingest-probe.js';
import { statePaths } from './gateway.js';
import { runAsCommand, SERVICE_CACHE_DIRECTORY, SERVICE_USER } from './cache-directory.js';
import { currentUid, describeOwnership, describeUser, userNameOf } from '../storage/ownership.js';
import { unwritableFiles } from '../storage/sqlite.js';
import { DeviceKeyError, loadOrCreateDeviceKey } from '../zones/device-key.js';
import { shellWord } from '../ui/shell-word.js';

const MAX_CLOCK_SKEW_S = 60;
const OK = 'ok  ';
const FAIL = 'FAIL';
const WARN = 'warn';

export interface DoctorOptions {
  config: string;
  /** Injected in tests; default the real poller. */
  poller?: Poller;
  clock?: () => number;
}

interface Check {
  problems: number;
  line(status: string, text: string): void;
}

/** Runs every check, prints a human-readable report, resolves with the exit code. */
export async function doctor(options: DoctorOptions, io: CommandIo): Promise<number> {
  io.out(`lintel-edge doctor: ${options.config}\n`);
  const loaded = loadCheckedConfig(options.config, undefined, io);
  if (!loaded) {
    io.out(`${FAIL} config    see the problems above\n`);
    return 2;
  }
  const { config, dialects, warnings } = loaded;
  const check: Check = {
    problems: 0,
    line(status, text) {
      if (status === FAIL) this.problems++;
      io.out(`${status} ${text}\n`);
    },
  };
  check.line(OK, `config    ${config.accessPoints.length} access point(s), ${config.zones.length} zone(s), poll every ${config.pollIntervalMs / 1000} s`);
  for (const warning of warnings) check.line(WARN, `config    ${warning}`);

  const clock = options.clock ?? Date.now;
  const now = clock();
  const year = new Date(now).getUTCFullYear();
  if (year < 2024 || year >= 2100) check.line(FAIL, `clock     the gateway's clock says ${new Date(now).toISOString()}; set the time (NTP) before counting`);

  const mayWriteState = checkState(config, options.config, check);
  if (config.sensors.length > 0) await checkSensors(config, io, check);

  const poller = options.poller ?? createPoller({ dialects });
  try {
    await checkAccessPoints(config, poller, check);
  } finally {
    if (!options.poller) await poller.close();
  }

  let serverDate: string | undefined;
  // The ingest's Date is compared with the gateway's clock read around the probe, not at the start:
  // the ledger's verification and an AP that does not answer can take minutes before it.
  let probedAt = now;
  if (!config.ingest) check.line(WARN, 'ingest    none configured: batches are kept in the ledger only');
  else if (!mayWriteState) check.line(WARN, `ingest    not probed: the probe is recorded in the ledger first, and this user must not write ${config.stateDir} (see state above)`);
  else {
    const sent = clock();
    serverDate = await checkIngest(config, now, check);
    probedAt = Math.round((sent + clock()) / 2);
  }

  if (year >= 2024 && year < 2100) {
    if (serverDate) {
      const skewS = (Date.parse(serverDate) - probedAt) / 1000;
      const text = `clock     ${new Date(probedAt).toISOString()}, ingest clock differs by ${Math.abs(skewS).toFixed(0)} s`;
      if (Math.abs(skewS) > MAX_CLOCK_SKEW_S) check.line(FAIL, `${text} (more than ${MAX_CLOCK_SKEW_S} s: check NTP)`);
      else check.line(OK, text);
    } else {
      check.line(OK, `clock     ${new Date(now).toISOString()} (not compared: the ingest gave no Date)`);
    }
  }
  io.out(check.problems === 0 ? 'result: all checks passed\n' : `result: ${check.problems} problem${check.problems === 1 ? '' : 's'}\n`);
  return check.problems === 0 ? 0 : 1;
}

/**
 * Another user's state directory: doctor run as root (`sudo lintel-edge doctor`) would create
 * ledger.sqlite as root, which the service user could then open only read-only, and the collector
 * would not start. So nothing in it is read or written, and the line says what to do. Where the
 * directory is the service user's, that is to run doctor as its owner. Where it is not (doctor run by
 * the service user, or it is root's: made with mkdir instead of the install step), running as its
 * owner would make the same root ledger, so the line names the install step that gives it to the
 * service user instead.
 */
function foreignStateDir(dir: string, configPath: string): string | undefined {
  const uid = currentUid();
  if (uid === undefined || !existsSync(dir)) return undefined;
  const owner = statSync(dir).uid;
  if (owner === uid) return undefined;
  const whose = `${dir} belongs to ${describeUser(owner)}, not to this user, ${describeUser(uid)}`;
  const callerIsServiceUser = userNameOf(uid) === SERVICE_USER;
  if (callerIsServiceUser || owner === 0) {
    const then = callerIsServiceUser ? 'run this doctor again' : `run doctor as that user: ${doctorAs(SERVICE_USER, dir, configPath)}`;
    return (
      `${whose}: the collector, running as the service user, ${SERVICE_USER}, could not write it. ` +
      `Give it to the service user, as root: ${installStateDirs([dir])}; then ${then} (nothing in it was read or written)`
    );
  }
  const name = userNameOf(owner);
  const runAs = name ? doctorAs(name, dir, configPath) : `run doctor as uid ${owner}`;
  return `${whose}: a ledger doctor made there would be this user's, and the collector could not write it. Run doctor as its owner: ${runAs} (nothing in it was read or written)`;
}

/**
 * A state directory that does not exist yet, with doctor run as root: the ingest probe would create it,
 * and the ledger in it, as root's, and the collector, running as the service user, could not write them.
 * So it is not created; the line names the install step that makes it the service user's, and whom to
 * run doctor as.
 */
function missingStateDirAsRoot(dir: string, configPath: string): string | undefined {
  if (currentUid() !== 0 || existsSync(dir)) return undefined;
  return (
    `${dir} does not exist, and doctor run as root does not create it: it and the ledger in it would be root's, which the collector, ` +
    `running as the service user, could not write. Create it, and the unit's cache directory, for the service user first: ` +
    `${installStateDirs([dir, SERVICE_CACHE_DIRECTORY])}; ` +
    `then run doctor as that user: ${doctorAs(SERVICE_USER, dir, configPath)} (nothing was created)`
  );
}

/** The install step (edge/systemd/lintel-edge.service) that makes `dirs` the service user's, mode 700; it also fixes existing ones. */
function installStateDirs(dirs: readonly string[]): string {
  return `install -d -m 0700 -o ${SERVICE_USER} -g ${SERVICE_USER} ${dirs.map(shellWord).join(' ')}`;
}

/** This doctor's command line, run as `user` over the state directory `dir` (runAsCommand quotes `dir`). */
function doctorAs(user: string, dir: string, configPath: string): string {
  return runAsCommand(user, `doctor --config ${shellWord(configPath)}`, { STATE_DIRECTORY: dir });
}

/** Checks the state directory; answers whether doctor may write in it (the ingest probe's ledger entry). */
function checkState(config: EdgeConfig, configPath: string, check: Check): boolean {
  const dir = config.stateDir;
  const paths = statePaths(dir);
  const refused = foreignStateDir(dir, configPath) ?? missingStateDirAsRoot(dir, configPath);
  if (refused) {
    check.line(FAIL, `state     ${refused}`);
    return false;
  }
  try {
    if (existsSync(dir)) accessSync(dir, constants.W_OK);
    else accessSync(dirname(dir), constants.W_OK);
  } catch {
    check.line(FAIL, `state     ${dir} is not writable by this user (run doctor as the service user, or fix StateDirectory)`);
    return true;
  }
  const key = checkDeviceKey(paths.deviceKey);
  const refusals = [...('problem' in key ? [key.problem] : []), ...unwritableStateFiles([paths.zones, paths.ledger])];
  if (refusals.length > 0) {
    for (const refusal of refusals) check.line(FAIL, `state     ${refusal}`);
    return true;
  }
  const parts: string[] = [`${dir} writable`, 'summary' in key ? key.summary : ''];
  if (existsSync(paths.ledger)) {
    try {
      const ledger = openLedger(paths.ledger, { readonly: true });
      try {
        const verdict = ledger.verify();
        if (!verdict.ok) {
          check.line(FAIL, `state     ledger chain broken at seq ${verdict.problems[0]?.seq}: run lintel-edge ledger verify`);
          return true;
        }
        parts.push(`ledger ${verdict.entries} entries, chain intact`);
      } finally {
        ledger.close();
      }
    } catch (err) {
      check.line(FAIL, `state     cannot read the ledger ${paths.ledger}: ${(err as Error).message}`);
      return true;
    }
  }
  check.line(OK, `state     ${parts.join('; ')}`);
  return true;
}

/**
 * The device key as the collector will take it: read with the collector's own loader (so the two cannot
 * disagree on what a key is), which refuses one this user cannot read, one that is not 32 bytes (a key
 * restored as hex text holds 64), and a link to nothing: each stops the start with exit 2. Read only
 * where there is a file (or link) and its mode is already 600, so the loader creates and changes nothing.
 */
function checkDeviceKey(path: string): { problem: string } | { summary: string } {
  try {
    lstatSync(path);
  } catch {
    return { summary: 'device key will be created on first run' };
  }
  let mode: number | undefined;
  try {
    mode = statSync(path).mode & 0o777;
  } catch {
    // a link to nothing: the loader says so
  }
  if (mode !== undefined && (mode & 0o077) !== 0) return { problem: `device key ${path} is mode ${mode.toString(8)}; chmod 600 it` };
  let key: Buffer;
  try {
    key = loadOrCreateDeviceKey(path);
  } catch (err) {
    const code = (err as DeviceKeyError).code;
    const owner = code === 'EACCES' || code === 'EPERM' ? `: it is ${describeOwnership(path)}; run as the file's owner, or chown it to the service user` : '';
    return { problem: `${err instanceof DeviceKeyError ? err.message : `cannot read the device key file ${path}: ${(err as Error).message}`}${owner}` };
  }
  return { summary: `device key readable, ${key.length} bytes, mode ${mode?.toString(8)}` };
}

/**
 * Each state file the collector writes (and the -wal and -shm beside it) that exists and this user may
 * not write: the collector refuses to open one at start (exit 2), as storage/sqlite.ts does. A root run
 * (`sudo lintel-edge run`) leaves such files, root's, in the service user's directory.
 */
function unwritableStateFiles(databases: readonly string[]): string[] {
  return databases
    .flatMap((path) => unwritableFiles(path))
    .map(
      ({ file, code }) =>
        `cannot write ${file} (${code}): it is ${describeOwnership(file)}; run as the file's owner, or chown it to the service user; the collector would not start (exit 2)`,
    );
}

/** The configured sensors name drivers the shipped bindings know (no command is sent to them). */
async function checkSensors(config: EdgeConfig, io: CommandIo, check: Check): Promise<void> {
  const catalog = await loadShippedBindings(io);
  if (!catalog) {
    check.line(FAIL, 'sensors   the shipped device bindings cannot be read');
    return;
  }
  const unknown = unknownDrivers(config.sensors, catalog);
  if (unknown.length > 0) {
    for (const line of unknown) check.line(FAIL, `sensors   ${line}`);
    return;
  }
  const described = createLocalDevices(config.sensors, catalog)
    .list()
    .map(({ sensor, actions }) => `${sensor.sensorId} (${actions.map((a) => a.name).join(', ') || 'no actions'})`);
  check.line(OK, `sensors   ${config.sensors.length} configured: ${described.join('; ')}`);
}

function targetOf(ap: AccessPoint): string {
  return `${ap.target.transport} ${ap.target.host}:${ap.target.port}`;
}

const VERDICTS: Record<string, string> = {
  timeout: 'reachable ?  no answer in time (host down, port filtered, or a wrong SNMP community)',
  unreachable: 'reachable ✗  connection refused or reset',
  auth: 'reachable ✓  authenticated ✗',
  bad_output: 'reachable ✓  authenticated ✓  walkable ✗',
  config: 'not polled: its configuration cannot work with its dialect',
  ap_down: 'reachable ✓  authenticated ✓  walkable ✓  AP down ✗ (its devices are frozen)',
  error: 'failed',
};

async function checkAccessPoints(config: EdgeConfig, poller: Poller, check: Check): Promise<void> {
  const results = await poller.pollAll(config.accessPoints, config.requestTimeoutMs);
  for (const ap of config.accessPoints) {
    // Own names only: a plain AP named `constructor` or `toString` is no AP of a controller's.
    const mine: ApPollResult[] = ap.apZones ? results.filter((r) => Object.hasOwn(ap.apZones!, r.ap)) : results.filter((r) => r.ap === ap.name);
    const head = `ap        ${ap.name} (${ap.dialect}, ${targetOf(ap)})`;
    const failed = mine.find((r) => !r.ok);
    if (mine.length === 0) {
      check.line(FAIL, `${head}: no result`);
      continue;
    }
    if (failed && !failed.ok) {
      const why = VERDICTS[failed.reason ?? 'error'] ?? 'failed';
      // a controller that answers can report several of its APs down: each is named, not only the first
      const errors =
        failed.reason === 'ap_down' ? mine.flatMap((r) => (!r.ok && r.reason === 'ap_down' ? [`AP ${config.reportNames[r.ap] ?? r.ap} ${r.error}`] : [])) : [failed.error];
      check.line(FAIL, `${head}: ${why} — ${redactIdentifiers(errors.join('; '))}`);
      continue;
    }
    const stations = mine.reduce((n, r) => n + (r.ok ? r.stations.length : 0), 0);
    const ms = Math.max(...mine.map((r) => r.durationMs));
    check.line(OK, `${head}: reachable ✓  authenticated ✓  walkable ✓  ${stations} station${stations === 1 ? '' : 's'} (${Math.round(ms)} ms)`);
    if (ap.apZones) {
      for (const r of mine) {
        const name = config.reportNames[r.ap] ?? r.ap;
        check.line(OK, `            ${name} → ${ap.apZones[r.ap]}: ${r.ok ? r.stations.length : 0} station(s)`);
      }
    }
  }
}

/**
 * Posts the signed probe (see ingest-probe.ts): one reading for the config's building that the ingest
 * refuses as too old once the signature and the key's buildings passed, and stores nothing. So the line
 * passes only where the collector's batches would be taken: URL, key, key id, and building.
 */
async function checkIngest(config: EdgeConfig, now: number, check: Check): Promise<string | undefined> {
  const ingest = config.ingest!;
  const body = probeBody(config, now);
  const paths = statePaths(config.stateDir);
  let recorded: { seq: number; close(answer: ProbeAnswer | undefined): void };
  // The probe leaves the gateway, so it is recorded in the ledger first, like any batch: on a gateway
  // that never ran, the ledger (and the state directory, but never as root: see checkState) are created
  // here, as the collector would.
  // What cannot be recorded is not sent.
  try {
    const ledger = openLedger(paths.ledger);
    try {
      const entry = ledger.append(body, now);
      recorded = {
        seq: entry.seq,
        close(answer) {
          try {
            if (answer) ledger.setDelivery(entry.seq, answer.outcome);
          } finally {
            ledger.close();
          }
        },
      };
    } catch (err) {
      ledger.close();
      throw err;
    }
  } catch (err) {
    check.line(FAIL, `ingest    cannot record the probe in the ledger ${paths.ledger} (${(err as Error).message}); not sent`);
    return undefined;
  }
  let answer: ProbeAnswer | undefined;
  try {
    answer = await sendProbe(ingest, body);
  } finally {
    try {
      recorded.close(answer);
    } catch {
      // the delivery note is informational
    }
  }
  const verdict = probeVerdict(answer, config.buildingId, ingest.keyId);
  check.line(verdict.ok ? OK : FAIL, `ingest    ${ingest.url}${ingest.keyId ? ` (key id ${ingest.keyId})` : ''}: ${verdict.text}`);
  return answer.outcome === 'unreachable' ? undefined : answer.serverDate;
}
