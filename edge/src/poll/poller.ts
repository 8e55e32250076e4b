/**
 * The poller: each tick, every configured AP at once, each bounded by the timeout. A failing or silent AP
 * gives `{ok: false}` for itself and never delays or stops the others; `pollAll` never rejects.
 *
 * Controllers (a dialect with `controller: true`, or any AP given `apZones` whose dialect names the AP
 * in each row): one session to the controller, then its rows are grouped by the AP identity column
 * (AP name or AP MAC) and each group becomes the result of one physical AP, named by that identity, in
 * the zone `apZones` maps it to. Every AP listed in `apZones` gets a result each tick (empty when it
 * carries nobody; the same failure when the controller fails, so the tracker freezes its devices);
 * rows of APs not listed are ignored.
 *
 * A controller stops listing the clients of an AP that reboots or drops off, which would read as an
 * empty AP and expire its devices. So when the dialect has an AP status table, it is walked in the same
 * session, and an AP of `apZones` that the controller reports as not up, or does not list, fails with
 * `ap_down`: its devices are frozen, not expired. A failed status walk fails the controller. A status
 * table without a single row cannot be told from one the agent does not serve (older firmware, an SNMP
 * view without it), so it is read as no status table, as before.
 *
 * What one AP may answer in a tick is bounded to fit the collector's heap (limits.ts): SSH output and
 * the length of a line of it that a parser matches line by line, the stations an AP lists (each AP behind
 * a controller on its own), the SNMP values of all APs' walks together, and the length of a row index an
 * SNMP agent answers. An AP answering more fails with
 * `bad_output` (a controller fails for every AP behind it); the process and the other APs are unaffected.
 *
 * An AP given by host name is looked up once per poll, before its session opens, through the poller's
 * bounded lookups (host-lookup.ts), and the session is handed the address: a name whose DNS does not
 * answer fails its AP (`timeout`) without taking the threads the other APs' lookups and the ingest post
 * need.
 */
import { performance } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { apIdentityFormat, type ApStatusTableSpec, type Dialect, type DialectCatalog, type SnmpDialect, type SshDialect } from './dialects.js';
import { createApHostLookup, isUnansweredLookup } from './host-lookup.js';
import { INTERFACE_NAME, interfaceNames } from './interfaces.js';
import { MAX_SSH_OUTPUT_BYTES, MAX_STATIONS_PER_AP, snmpCellBudget } from './limits.js';
import { normalizeMac, scrubMacsShort } from './mac.js';
import { PARSERS, ParseError } from './parsers/index.js';
import { toDbm } from './signal.js';
import { CellBudget, IndexTooLongError, openNetSnmpSession, TooManyValuesError, type OpenSnmpSession } from './snmp/session.js';
import { decodeApStatusTable, decodeStationTable, walkApStatusTable, walkStationTable, type ApState } from './snmp/table.js';
import { openSsh2Session, SshError, type OpenSshSession } from './ssh/session.js';
import type { AccessPoint, ApPollResult, Poller, PollFailureReason, StationSighting } from './types.js';
import { printableLine } from '../ui/printable.js';
import type { Resolver } from '../../../shared/lookup.js';

export interface PollerOptions {
  /** The dialects the APs name (see `loadDialects`). */
  dialects: DialectCatalog;
  /** SNMP port; default net-snmp. */
  openSnmp?: OpenSnmpSession;
  /** SSH port; default ssh2. */
  openSsh?: OpenSshSession;
  /** GETBULK max-repetitions. Default 25. */
  maxRepetitions?: number;
  /** Bound on one SSH command's output. Default 1 MiB ({@link MAX_SSH_OUTPUT_BYTES}). */
  maxOutputBytes?: number;
  /** Bound on the SNMP values all APs' walks of one poll return together. Default: sized to the heap ({@link snmpCellBudget}). */
  maxSnmpCells?: number;
  /** How AP host names are resolved. Default dns.lookup, so /etc/hosts applies. */
  resolve?: Resolver;
  /** AP host names looked up at once, by this poller (the collector's one). Default 2 (host-lookup.ts). */
  maxLookups?: number;
}

/** A failure with its reason, raised inside one AP's poll and turned into `{ok: false}`. */
class PollFailure extends Error {
  constructor(
    readonly reason: PollFailureReason,
    message: string,
  ) {
    super(message);
  }
}

/** What a controller's AP status table said this tick: each AP's state, by identity. */
interface ApStatusReport {
  spec: ApStatusTableSpec;
  aps: ReadonlyMap<string, ApState>;
}

/**
 * One AP's stations before zoning: the loudest reading per MAC, in dBm. Behind a controller, by AP
 * identity, with the controller's AP states when its dialect has a status table that lists any AP.
 */
type Grouped =
  | { kind: 'single'; stations: StationSighting[] }
  | { kind: 'byAp'; stations: Map<string, StationSighting[]>; apStatus?: ApStatusReport };

const elapsedSince = (started: number) => Math.round((performance.now() - started) * 10) / 10;

/** Loudest reading per MAC, so one device is one sighting per AP whatever the radios and antennas. */
export function loudestPerMac(sightings: Iterable<StationSighting>): StationSighting[] {
  const best = new Map<string, number>();
  for (const { mac, rssiDbm } of sightings) {
    const seen = best.get(mac);
    if (seen === undefined || rssiDbm > seen) best.set(mac, rssiDbm);
  }
  return [...best].map(([mac, rssiDbm]) => ({ mac, rssiDbm }));
}

/**
 * apZones by the identity the dialect's tables give. A dialect naming APs by MAC gets MAC-looking keys
 * normalised, so `AA-BB-…` in a config matches `aa:bb:…` from a table; one naming them by text keeps the
 * keys as written, as the tables give names as written, even a name that looks like a MAC.
 */
function normalizedApZones(apZones: Record<string, string>, dialect: Dialect): Map<string, { name: string; zone: string }> {
  const byMac = dialect.transport === 'snmp' && apIdentityFormat(dialect) === 'mac';
  const out = new Map<string, { name: string; zone: string }>();
  for (const [name, zone] of Object.entries(apZones)) out.set((byMac && normalizeMac(name)) || name, { name, zone });
  return out;
}

function splitsByAp(ap: AccessPoint, dialect: Dialect): boolean {
  if (dialect.transport !== 'snmp') return false;
  return dialect.controller || (ap.apZones !== undefined && dialect.tables.some((table) => table.apIdentity));
}

/**
 * Why an AP behind a controller gets no stations this tick, or undefined when the controller says it is
 * up. The AP is not named here: its identity may be a MAC, and the result carries it for whoever reports
 * it under its configured name.
 */
function whyDown(identity: string, status: ApStatusReport): string | undefined {
  const state = status.aps.get(identity);
  const column = status.spec.status;
  if (state === undefined) return `not joined to the controller (not listed in ${status.spec.name})`;
  if (state.up) return undefined;
  if (state.value === undefined) return `no readable ${column.name} on the controller`;
  const meaning = column.states?.[String(state.value)];
  return `not up on the controller: ${column.name} is ${state.value}${meaning ? ` (${meaning})` : ''}`;
}

/**
 * What is wrong with an AP's configuration for its dialect, one line each (empty when it can be polled).
 * Config loading calls this at start, so problems surface before the first tick.
 *
 * @example
 * checkAccessPoint({ name: 'wlc', zone: 'lobby', dialect: 'cisco-wlc', target: snmpTarget }, dialects);
 * // ['dialect cisco-wlc is a controller: apZones must map each AP behind it to a zone']
 */
export function checkAccessPoint(ap: AccessPoint, dialects: DialectCatalog): string[] {
  const dialect = dialects.get(ap.dialect);
  if (!dialect) return [`unknown dialect "${ap.dialect}" (known: ${[...dialects.keys()].sort().join(', ')})`];
  const problems: string[] = [];
  if (dialect.transport !== ap.target.transport) {
    problems.push(`dialect ${dialect.name} is read over ${dialect.transport}, but the target is ${ap.target.transport}`);
  }
  if (dialect.transport === 'snmp' && dialect.controller && Object.keys(ap.apZones ?? {}).length === 0) {
    problems.push(`dialect ${dialect.name} is a controller: apZones must map each AP behind it to a zone`);
  }
  if (ap.apZones && dialect.transport === 'snmp' && !splitsByAp(ap, dialect)) {
    problems.push(`dialect ${dialect.name} does not say which AP heard a station, so apZones cannot be used`);
  }
  if (ap.apZones && dialect.transport === 'ssh') problems.push(`apZones is only for SNMP controllers, not ${dialect.name}`);
  const target = ap.target;
  if (target.transport === 'snmp') {
    if (target.version === '2c' && !target.community) problems.push('SNMP v2c needs a community');
    if (target.version === '3' && !target.user) problems.push('SNMP v3 needs a user');
    if (target.version === '3' && target.privKey && !target.authKey) problems.push('SNMP v3 privacy needs an auth key too');
  }
  if (target.transport === 'ssh' && dialect.transport === 'ssh') {
    try {
      commandsFor(dialect, target.interface);
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  return problems;
}

/** The commands to run: the dialect's command once per interface, `{if}` substituted. */
function commandsFor(dialect: SshDialect, interfaces: string | undefined): string[] {
  if (!dialect.command.includes('{if}')) return [dialect.command];
  const names = interfaceNames(interfaces ?? dialect.defaultInterface ?? '');
  if (names.length === 0) throw new PollFailure('config', `dialect ${dialect.name} needs an interface name`);
  const bad = names.find((name) => !INTERFACE_NAME.test(name));
  // the command runs in the AP's shell: anything but a plain interface name is refused
  if (bad !== undefined) throw new PollFailure('config', `interface "${scrubMacsShort(bad, 40)}" is not a plain interface name`);
  return names.map((name) => dialect.command.replaceAll('{if}', name));
}

/**
 * One answer's stations in dBm. A row whose signal is no real reading (0, out of range, not a number: how
 * some APs write "unknown") is still a station associated with the AP, so it is kept, at -Infinity:
 * below any real reading, it never wins loudest AP, and the tracker measures no margin by it. `unusable`
 * counts those rows. An answer without a single readable row gives no sightings at all, so the caller
 * reports it as output the dialect cannot read, not as an AP of stations of unknown signal.
 */
function toSightings(raw: Iterable<{ mac: string; signal: number }>, dialect: Dialect): { sightings: StationSighting[]; unusable: number } {
  const sightings: StationSighting[] = [];
  let unusable = 0;
  for (const { mac, signal } of raw) {
    const rssiDbm = toDbm(signal, dialect.signal);
    if (rssiDbm === undefined) unusable++;
    sightings.push({ mac, rssiDbm: rssiDbm ?? Number.NEGATIVE_INFINITY });
  }
  return { sightings: unusable === sightings.length ? [] : sightings, unusable };
}

/**
 * The first line of an AP's stderr for a failure reason: 200 characters at most, MACs blanked (made
 * printable with every failure's text, in `resultsOf`).
 */
function firstLineOf(stderr: string): string {
  const text = stderr.trimStart();
  const end = text.indexOf('\n');
  return scrubMacsShort(end === -1 ? text : text.slice(0, end), 200).trimEnd();
}

/**
 * Fails an AP that lists more stations than any AP carries ({@link MAX_STATIONS_PER_AP}): made up, and
 * the tracker would keep them all. `where` says which AP behind a controller, without naming it (its
 * identity may be a MAC).
 */
function checkStationCount(stations: number, where = ''): void {
  if (stations > MAX_STATIONS_PER_AP) {
    throw new PollFailure('bad_output', `more than ${MAX_STATIONS_PER_AP} stations listed${where} (${stations}); no AP carries that many`);
  }
}

const SSH_REASONS: Record<SshError['code'], PollFailureReason> = {
  auth_failed: 'auth',
  host_key_mismatch: 'auth',
  bad_key: 'config',
  unreachable: 'unreachable',
  timeout: 'timeout',
  output_too_large: 'bad_output',
  closed: 'error',
  failed: 'error',
};

function describeFailure(error: unknown): PollFailure {
  if (error instanceof PollFailure) return error;
  // a name not answered in time reads as an AP that does not answer in time
  if (isUnansweredLookup(error)) return new PollFailure('timeout', scrubMacsShort(error.message, 300));
  if (error instanceof ParseError) return new PollFailure('bad_output', scrubMacsShort(error.message, 300));
  if (error instanceof TooManyValuesError || error instanceof IndexTooLongError) return new PollFailure('bad_output', error.message);
  if (error instanceof SshError) {
    return new PollFailure(SSH_REASONS[error.code], scrubMacsShort(error.message, 300));
  }
  const err = error as Error & { name?: string; code?: unknown };
  const message = scrubMacsShort(String(err?.message ?? error), 300);
  if (err?.name === 'RequestTimedOutError') return new PollFailure('timeout', 'no SNMP answer (request timed out)');
  if (err?.name === 'ResponseInvalidError' && /auth|digest|decrypt|unknown user|usm/i.test(message)) {
    return new PollFailure('auth', `SNMP credentials refused: ${message}`);
  }
  // The agent's answer to a request below the user's security level (authNoPriv for an authPriv user,
  // say): the credentials are wrong for this AP, which doctor reports as not authenticated.
  if (err?.name === 'RequestFailedError' && /AuthorizationError/.test(message)) {
    return new PollFailure('auth', `SNMP credentials refused: ${message} (is the security level, auth or priv, the one the AP requires?)`);
  }
  if (/ECONNREFUSED/.test(message)) return new PollFailure('unreachable', message);
  return new PollFailure('error', `${err?.name && err.name !== 'Error' ? `${err.name}: ` : ''}${message}`);
}

/**
 * Creates the poller. Sessions are opened per poll and always closed when the AP's poll settles,
 * including on timeout.
 *
 * @example
 * const poller = createPoller({ dialects: loadDialects() });
 * const results = await poller.pollAll(config.accessPoints, config.requestTimeoutS * 1000);
 * await poller.close();
 */
export function createPoller(options: PollerOptions): Poller {
  const dialects = options.dialects;
  const openSnmp = options.openSnmp ?? openNetSnmpSession;
  const openSsh = options.openSsh ?? openSsh2Session;
  const maxRepetitions = options.maxRepetitions ?? 25;
  const maxOutputBytes = options.maxOutputBytes ?? MAX_SSH_OUTPUT_BYTES;
  const maxSnmpCells = options.maxSnmpCells ?? snmpCellBudget(getHeapStatistics().heap_size_limit);
  const lookupHost = createApHostLookup({ resolve: options.resolve, maxLookups: options.maxLookups });
  const inFlight = new Set<AbortController>();
  let closed = false;

  async function pollSnmp(ap: AccessPoint, dialect: SnmpDialect, timeoutMs: number, signal: AbortSignal, cells: CellBudget): Promise<Grouped> {
    if (ap.target.transport !== 'snmp') throw new PollFailure('config', `dialect ${dialect.name} needs an SNMP target`);
    const byAp = splitsByAp(ap, dialect);
    const statusSpec = byAp ? dialect.apStatus : undefined;
    // IPv4 for a name: the socket's family follows the host, and an IPv6-only AP is given by its address
    const [agent] = await lookupHost(ap.target.host, { family: 4, timeoutMs, signal });
    // a session opened after the poll ended would never be closed: its abort has fired already
    if (signal.aborted) throw new PollFailure('error', 'poll ended');
    const session = openSnmp({ ...ap.target, host: agent!.address }, { requestTimeoutMs: timeoutMs, cells });
    const abort = () => session.close();
    signal.addEventListener('abort', abort, { once: true });
    // Only a result holds the walked values to the end of the poll: a failure drops them.
    let succeeded = false;
    try {
      // the status walk shares the session and the deadline; its failure is the controller's failure
      const [decoded, status] = await Promise.all([
        Promise.all(
          dialect.tables.map(async (table) =>
            decodeStationTable(table, await walkStationTable(session, table, { withIdentity: byAp, maxRepetitions })),
          ),
        ),
        statusSpec ? walkApStatusTable(session, statusSpec, { maxRepetitions }).then((walked) => decodeApStatusTable(statusSpec, walked)) : undefined,
      ]);
      let rows = 0;
      let unreadable = 0;
      const raw: Array<{ mac: string; signal: number; apIdentity?: string }> = [];
      for (const table of decoded) {
        rows += table.rows;
        unreadable += table.skipped;
        raw.push(...table.sightings);
      }
      const converted = toSightings(raw, dialect);
      unreadable += converted.unusable;
      if (rows > 0 && converted.sightings.length === 0 && unreadable > 0) {
        throw new PollFailure('bad_output', `${rows} station rows, none readable with dialect ${dialect.name}`);
      }
      if (!byAp) {
        const stations = loudestPerMac(converted.sightings);
        checkStationCount(stations.length);
        succeeded = true;
        return { kind: 'single', stations };
      }
      const perAp = new Map<string, StationSighting[]>();
      // toSightings keeps every row, in order (an answer with none readable has thrown above): the i-th
      // sighting is the i-th row's.
      raw.forEach((row, i) => {
        if (row.apIdentity === undefined) return;
        const list = perAp.get(row.apIdentity) ?? [];
        list.push(converted.sightings[i]!);
        perAp.set(row.apIdentity, list);
      });
      const stations = new Map([...perAp].map(([id, list]) => [id, loudestPerMac(list)]));
      // the APs of apZones are the ones the tracker is told of; the rows of others are ignored
      for (const identity of normalizedApZones(ap.apZones ?? {}, dialect).keys()) {
        checkStationCount(stations.get(identity)?.length ?? 0, ' for one AP behind the controller');
      }
      succeeded = true;
      // no row at all: not served here (or nothing joined, which the station table then shows as empty)
      if (!statusSpec || !status || status.rows === 0) return { kind: 'byAp', stations };
      return { kind: 'byAp', stations, apStatus: { spec: statusSpec, aps: status.aps } };
    } finally {
      signal.removeEventListener('abort', abort);
      session.close(succeeded);
    }
  }

  async function pollSsh(ap: AccessPoint, dialect: SshDialect, timeoutMs: number, signal: AbortSignal): Promise<Grouped> {
    if (ap.target.transport !== 'ssh') throw new PollFailure('config', `dialect ${dialect.name} needs an SSH target`);
    const commands = commandsFor(dialect, ap.target.interface);
    const parse = PARSERS[dialect.parser];
    const addresses = await lookupHost(ap.target.host, { family: 0, timeoutMs, signal });
    // the poll's own deadline is the bound; the handshake timeout is only a backstop behind it
    const session = await openSsh(ap.target, { timeoutMs: timeoutMs + 1000, signal, addresses });
    const abort = () => session.close();
    signal.addEventListener('abort', abort, { once: true });
    try {
      // Every interface's rows, converted together: one interface whose rows all lack a reading still
      // lists associated stations when another interface's rows are readable.
      const raw: Array<{ mac: string; signal: number }> = [];
      let unreadable = 0;
      let found = 0;
      for (const command of commands) {
        const result = await session.exec(command, { maxOutputBytes });
        const firstLine = firstLineOf(result.stderr);
        if (result.exitCode !== 0) {
          throw new PollFailure(
            'bad_output',
            `\`${command}\` ${result.exitCode === null ? 'was killed' : `exited with ${result.exitCode}`}${firstLine ? `: ${firstLine}` : ''}`,
          );
        }
        // Blank output is how some parsers read an AP with nobody on it; with only an error beside it, it is
        // a failure whose status was lost (a wrapper script), and the tracker must freeze, not expire.
        if (result.stdout.trim() === '' && /\S/.test(result.stderr)) {
          throw new PollFailure('bad_output', `\`${command}\` printed nothing but an error: ${firstLine}`);
        }
        const parsed = parse(result.stdout);
        found += parsed.stations.length + parsed.skipped;
        checkStationCount(found);
        unreadable += parsed.skipped;
        for (const station of parsed.stations) raw.push(station);
      }
      const { sightings, unusable } = toSightings(raw, dialect);
      unreadable += unusable;
      if (found > 0 && sightings.length === 0 && unreadable > 0) {
        throw new PollFailure('bad_output', `${found} stations listed, none with a usable signal (dialect ${dialect.name})`);
      }
      return { kind: 'single', stations: loudestPerMac(sightings) };
    } finally {
      signal.removeEventListener('abort', abort);
      session.close();
    }
  }

  /**
   * Expands one AP's outcome into results: one for a plain AP, one per mapped AP behind a controller.
   * A failure's text is made one printable line here: it may quote the AP (a line of its stderr, an SSH
   * server's disconnect message), and doctor shows it on the installer's terminal, which would obey a
   * control character in it.
   */
  function resultsOf(ap: AccessPoint, dialect: Dialect | undefined, outcome: Grouped | PollFailure, durationMs: number): ApPollResult[] {
    const mapped = dialect && splitsByAp(ap, dialect) && ap.apZones ? normalizedApZones(ap.apZones, dialect) : undefined;
    if (outcome instanceof PollFailure) {
      const failure = { ok: false as const, error: printableLine(outcome.message), reason: outcome.reason, durationMs };
      if (!mapped || mapped.size === 0) return [{ ap: ap.name, zone: ap.zone, ...failure }];
      return [...mapped.values()].map(({ name, zone }) => ({ ap: name, zone, ...failure }));
    }
    if (outcome.kind === 'single' || !mapped) {
      const stations = outcome.kind === 'single' ? outcome.stations : loudestPerMac([...outcome.stations.values()].flat());
      return [{ ap: ap.name, zone: ap.zone, ok: true, stations, durationMs }];
    }
    const apStatus = outcome.apStatus;
    return [...mapped].map(([identity, { name, zone }]): ApPollResult => {
      const down = apStatus && whyDown(identity, apStatus);
      if (down !== undefined) return { ap: name, zone, ok: false, error: down, reason: 'ap_down', durationMs };
      return { ap: name, zone, ok: true, stations: outcome.stations.get(identity) ?? [], durationMs };
    });
  }

  async function pollOne(ap: AccessPoint, timeoutMs: number, cells: CellBudget): Promise<ApPollResult[]> {
    const started = performance.now();
    const dialect = dialects.get(ap.dialect);
    const controller = new AbortController();
    inFlight.add(controller);
    let timer: NodeJS.Timeout | undefined;
    try {
      if (closed) throw new PollFailure('error', 'poller closed');
      const problems = checkAccessPoint(ap, dialects);
      if (problems.length > 0 || !dialect) throw new PollFailure('config', problems.join('; '));
      const work =
        dialect.transport === 'snmp'
          ? pollSnmp(ap, dialect, timeoutMs, controller.signal, cells)
          : pollSsh(ap, dialect, timeoutMs, controller.signal);
      const deadline = new Promise<never>((_, reject) => {
        const hint = dialect.transport === 'snmp' ? ' (a wrong v2c community or v3 privacy key looks the same: agents stay silent)' : '';
        timer = setTimeout(() => reject(new PollFailure('timeout', `no complete answer within ${timeoutMs} ms${hint}`)), timeoutMs);
      });
      const aborted = new Promise<never>((_, reject) => {
        controller.signal.addEventListener('abort', () => reject(new PollFailure('error', 'poller closed')), { once: true });
      });
      // the losers of the race reject later; nobody waits for them
      for (const loser of [work, deadline, aborted]) loser.catch(() => undefined);
      const grouped = await Promise.race([work, deadline, aborted]);
      return resultsOf(ap, dialect, grouped, elapsedSince(started));
    } catch (error) {
      return resultsOf(ap, dialect, describeFailure(error), elapsedSince(started));
    } finally {
      clearTimeout(timer);
      // closes whatever the poll still holds open (a walk or an SSH connect past the deadline)
      controller.abort();
      inFlight.delete(controller);
    }
  }

  return {
    async pollAll(aps, timeoutMs) {
      // One budget for the SNMP values of the whole poll: the APs are walked at once.
      const cells = new CellBudget(maxSnmpCells);
      const results = await Promise.all(aps.map((ap) => pollOne(ap, timeoutMs, cells)));
      return results.flat();
    },
    async close() {
      closed = true;
      for (const controller of inFlight) controller.abort();
      inFlight.clear();
    },
  };
}
