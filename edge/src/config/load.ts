/**
 * Reads the gateway's YAML config once, at start, and reports every problem at once with its path:
 * YAML syntax, shapes and kinds, cross-field rules, dialects, and secret files.
 */
import { createCipheriv } from 'node:crypto';
import { accessSync, constants, readFileSync, statSync, type Stats } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseDocument, type Document } from 'yaml';
import { formatErrors } from '../../../shared/kinds.js';
import type { AccessPoint } from '../poll/types.js';
import type { TrackerConfig } from '../zones/types.js';
import { DEFAULT_TRACKER_CONFIG } from '../zones/types.js';
import { metricOf } from '../../../shared/catalog/metrics.js';
import type { RegisteredSensor } from '../../../shared/devices/adapter.js';
import { looksLikeIdentifier } from '../report/identifiers.js';
import { normalizeMac } from '../poll/mac.js';
import { SecretFilePath } from './codecs.js';
import { EdgeConfigFile, type AccessPointConfig } from './schema.js';

/** What the config needs to know of an AP dialect. */
export interface DialectInfo {
  transport: 'snmp' | 'ssh';
  /** A controller answers for many APs, each mapped to a zone with apZones. */
  controller?: boolean;
  /**
   * Its rows name the AP (or AP radio) that carries each station, so apZones may split its stations
   * per AP even when it is not a controller (an ArubaOS mobility controller keyed by BSSID).
   */
  namesApOfStation?: boolean;
  /**
   * How its rows name that AP: `mac` (the poller matches apZones keys as normalised MACs, so two
   * spellings of one MAC are one AP) or `text` (keys as written).
   */
  apIdentity?: 'mac' | 'text' | undefined;
}

export interface EdgeConfig {
  /** The file it was read from (absolute). */
  source: string;
  buildingId: string;
  pollIntervalMs: number;
  requestTimeoutMs: number;
  stateDir: string;
  /** Every zone, with its devices-per-person factor where set. */
  zones: Array<{ id: string; devicesPerPerson?: number }>;
  tracker: TrackerConfig;
  ingest?: { url: string; secret: string; keyId?: string; timeoutMs: number };
  metrics?: { host: string; port: number };
  logLevel: string;
  /** Ledger entries older than this are pruned (the chain stays verifiable from a checkpoint). */
  ledgerRetentionMs: number;
  /** The APs with their secrets read from their files. */
  accessPoints: AccessPoint[];
  /** The name reports use for each AP a poll result names (an AP, or an AP behind a controller). */
  reportNames: Record<string, string>;
  /** Devices the gateway drives locally (`lintel-edge action`). */
  sensors: RegisteredSensor[];
}

export type ConfigResult = { ok: true; config: EdgeConfig; warnings: string[] } | { ok: false; errors: string[] };

export interface LoadOptions {
  /** The dialects available, by name. */
  dialects: ReadonlyMap<string, DialectInfo>;
  /** Overrides tracker.frozenPolls (the `--frozen-polls` flag). */
  frozenPolls?: number;
  /** Default state directory when the file sets none (systemd's $STATE_DIRECTORY, else /var/lib/lintel-edge). */
  defaultStateDir?: string;
}

const DEFAULT_INGEST_TIMEOUT_S = 5;
/** yaml's own default: enough for any hand-written config, far too few for an alias bomb. */
const MAX_ALIAS_COUNT = 100;
const NAME_FOR_REPORTS = /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,127}$/;
/**
 * The longest the tracker remembers, in seconds. Every move of the transition window is kept in memory,
 * walked and rewritten to the zone file every poll; every device unheard for absentPolls is kept, and a
 * randomised MAC is never heard again. A day is more than any report needs; much more outgrows the heap.
 */
const MAX_TRACKER_MEMORY_S = 86_400;

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === 'object' && u !== null && !Array.isArray(u);

/**
 * Reads, checks and resolves a config file.
 *
 * @example
 * const result = loadConfig('/etc/lintel-edge/config.yaml', { dialects });
 * if (!result.ok) console.error(result.errors.join('\n'));
 */
export function loadConfig(path: string, options: LoadOptions): ConfigResult {
  const read = readConfigText(path);
  return read.ok ? parseConfig(read.text, read.source, options) : read;
}

/** The config file's text and absolute path, or why it cannot be read. */
function readConfigText(path: string): { ok: true; text: string; source: string } | { ok: false; errors: string[] } {
  const source = resolve(path);
  try {
    return { ok: true, text: readFileSync(source, 'utf8'), source };
  } catch (err) {
    return { ok: false, errors: [`${path}: cannot read the config file (${(err as NodeJS.ErrnoException).code ?? 'error'})`] };
  }
}

/**
 * A parsed document as plain values, or why yaml would not expand it: an alias to no anchor, or an alias
 * bomb (a few lines that unfold into millions of values), which yaml refuses by throwing.
 */
function yamlValueOf(doc: Document.Parsed): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) };
  } catch (err) {
    if (!(err instanceof ReferenceError)) throw err;
    const bomb = /excessive alias/i.test(err.message);
    return { ok: false, error: bomb ? `YAML: too many alias expansions (more than ${MAX_ALIAS_COUNT}); write the values out instead of repeating aliases` : `YAML: ${err.message}` };
  }
}

/**
 * Only the state directory a config file names (or `defaultStateDir`): what the ledger commands need.
 * Nothing else of the file is checked and no secret file is read, so an auditor who may read the ledger
 * but not the gateway's secrets can still find it.
 *
 * @example
 * stateDirOf('/etc/lintel-edge/config.yaml', '/var/lib/lintel-edge'); // { ok: true, stateDir: '/var/lib/lintel-edge' }
 */
export function stateDirOf(path: string, defaultStateDir: string): { ok: true; stateDir: string } | { ok: false; errors: string[] } {
  const read = readConfigText(path);
  if (!read.ok) return read;
  const { text, source } = read;
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0) return { ok: false, errors: [`${path}: not valid YAML (${doc.errors[0]!.message.split('\n')[0]})`] };
  const raw = yamlValueOf(doc);
  if (!raw.ok) return { ok: false, errors: [`${path}: ${raw.error}`] };
  const value = (raw.value as Record<string, unknown> | null)?.stateDir;
  if (value === undefined || value === null) return { ok: true, stateDir: defaultStateDir };
  if (typeof value !== 'string' || value.trim() === '' || value.includes('\0')) return { ok: false, errors: [`stateDir: expected a directory path, got ${typeof value === 'string' ? JSON.stringify(value) : typeof value}`] };
  return { ok: true, stateDir: resolve(dirname(source), value) };
}

/** {@link loadConfig} over text already read; `source` anchors relative secret file paths. */
export function parseConfig(text: string, source: string, options: LoadOptions): ConfigResult {
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      errors: doc.errors.map((e) => {
        const at = e.linePos?.[0];
        return `${at ? `line ${at.line}, column ${at.col}` : 'YAML'}: ${(e.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '')}`;
      }),
    };
  }
  const value = yamlValueOf(doc);
  if (!value.ok) return { ok: false, errors: [value.error] };
  const raw = value.value;
  const baseDir = dirname(source);
  const errors: string[] = [];
  const warnings: string[] = [];

  const decoded = EdgeConfigFile.decode(raw);
  if (decoded._tag === 'Left') errors.push(...formatErrors(decoded.left));
  errors.push(...crossCheck(raw, options, baseDir, warnings));
  if (options.frozenPolls !== undefined && !(Number.isSafeInteger(options.frozenPolls) && options.frozenPolls >= 1)) {
    errors.push(`--frozen-polls: expected a positive integer, got ${options.frozenPolls}`);
  }
  if (errors.length > 0 || decoded._tag === 'Left') return { ok: false, errors: [...new Set(errors)] };

  const file = decoded.right;
  const pollIntervalMs = Math.round(file.pollIntervalS * 1000);
  const windowS = file.tracker?.transitionWindowS ?? 300;
  const tracker: TrackerConfig = {
    switchPolls: file.tracker?.switchPolls ?? DEFAULT_TRACKER_CONFIG.switchPolls,
    switchMarginDb: file.tracker?.switchMarginDb ?? DEFAULT_TRACKER_CONFIG.switchMarginDb,
    frozenPolls: options.frozenPolls ?? file.tracker?.frozenPolls ?? DEFAULT_TRACKER_CONFIG.frozenPolls,
    absentPolls: file.tracker?.absentPolls ?? DEFAULT_TRACKER_CONFIG.absentPolls,
    transitionWindowPolls: Math.max(1, Math.ceil(windowS / file.pollIntervalS)),
  };
  const config: EdgeConfig = {
    source,
    buildingId: file.buildingId,
    pollIntervalMs,
    requestTimeoutMs: Math.round(file.requestTimeoutS * 1000),
    stateDir: file.stateDir ? resolve(baseDir, file.stateDir) : (options.defaultStateDir ?? '/var/lib/lintel-edge'),
    zones: Object.entries(file.zones).map(([id, zone]) => (zone?.devicesPerPerson !== undefined ? { id, devicesPerPerson: zone.devicesPerPerson } : { id })),
    tracker,
    logLevel: file.logLevel ?? 'info',
    ledgerRetentionMs: (file.ledgerRetentionDays ?? 30) * 24 * 3_600_000,
    accessPoints: file.accessPoints.map((ap) => resolveAccessPoint(ap, baseDir)),
    reportNames: reportNamesOf(file.accessPoints),
    sensors: (file.sensors ?? []).map((s) => ({ sensorId: s.sensorId, buildingId: file.buildingId, roomId: s.zone, metric: s.metric, driver: s.driver, endpoint: s.endpoint })),
  };
  if (file.ingest) {
    config.ingest = {
      url: file.ingest.url,
      secret: readSecret(resolve(baseDir, file.ingest.secretFile)),
      timeoutMs: Math.round((file.ingest.timeoutS ?? Math.min(DEFAULT_INGEST_TIMEOUT_S, file.pollIntervalS)) * 1000),
      ...(file.ingest.keyId ? { keyId: file.ingest.keyId } : {}),
    };
  }
  if (file.metrics) {
    const m = /^(\[[0-9a-fA-F:]+\]|[^:]+):(\d+)$/.exec(file.metrics.listen)!;
    config.metrics = { host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) };
  }
  return { ok: true, config, warnings };
}

/** An apZones entry as zone and reported name. */
function controlledAp(identity: string, entry: string | { zone: string; name?: string }): { zone: string; name: string } {
  return typeof entry === 'string' ? { zone: entry, name: identity } : { zone: entry.zone, name: entry.name ?? identity };
}

function reportNamesOf(aps: readonly AccessPointConfig[]): Record<string, string> {
  const names: Record<string, string> = {};
  for (const ap of aps) {
    if (ap.apZones) for (const [identity, entry] of Object.entries(ap.apZones)) names[identity] = controlledAp(identity, entry).name;
    else names[ap.name] = ap.name;
  }
  return names;
}

/** A secret file's contents, without the trailing newline editors add. */
function readSecret(path: string): string {
  return readFileSync(path, 'utf8').replace(/\r?\n$/, '');
}

function resolveAccessPoint(ap: AccessPointConfig, baseDir: string): AccessPoint {
  const file = (p: string) => resolve(baseDir, p);
  const apZones = ap.apZones
    ? Object.fromEntries(Object.entries(ap.apZones).map(([identity, entry]) => [identity, controlledAp(identity, entry).zone]))
    : undefined;
  // An AP split by apZones has no zone of its own; its results carry the zones of the APs behind it.
  const zone = ap.zone ?? (apZones ? Object.values(apZones)[0] : undefined) ?? '';
  const out: AccessPoint = { name: ap.name, zone, dialect: ap.dialect, target: { transport: 'snmp', host: ap.host, port: 161, version: '2c' } };
  if (apZones) out.apZones = apZones;
  if (ap.transport === 'snmp' && ap.snmp) {
    const s = ap.snmp;
    out.target = {
      transport: 'snmp',
      host: ap.host,
      port: s.port ?? 161,
      version: s.version,
      ...(s.communityFile ? { community: readSecret(file(s.communityFile)) } : {}),
      ...(s.user !== undefined ? { user: s.user } : {}),
      ...(s.authKeyFile ? { authProtocol: s.authProtocol ?? 'sha', authKey: readSecret(file(s.authKeyFile)) } : {}),
      ...(s.privKeyFile ? { privProtocol: s.privProtocol ?? 'aes', privKey: readSecret(file(s.privKeyFile)) } : {}),
    };
  } else if (ap.transport === 'ssh' && ap.ssh) {
    const s = ap.ssh;
    out.target = {
      transport: 'ssh',
      host: ap.host,
      port: s.port ?? 22,
      username: s.username,
      privateKey: readFileSync(file(s.privateKeyFile), 'utf8'),
      ...(s.hostKeySha256 ? { hostKeySha256: s.hostKeySha256.replace(/^SHA256:/, '') } : {}),
      ...(s.interface ? { interface: s.interface } : {}),
    };
  }
  return out;
}

/**
 * Rules across fields, run on the raw document so they are reported together with shape errors. Each
 * check guards its own inputs; a value of the wrong kind is already reported by the codec.
 */
function crossCheck(raw: unknown, options: LoadOptions, baseDir: string, warnings: string[]): string[] {
  if (!isRecord(raw)) return [];
  const errors: string[] = [];
  const { pollIntervalS, requestTimeoutS } = raw;
  if (typeof pollIntervalS === 'number' && typeof requestTimeoutS === 'number' && requestTimeoutS > pollIntervalS) {
    errors.push(`requestTimeoutS: expected at most pollIntervalS (${pollIntervalS}), got ${requestTimeoutS}; an AP request must end before the next tick`);
  }
  const ingest = raw.ingest;
  if (isRecord(ingest)) {
    if (typeof ingest.timeoutS === 'number' && typeof pollIntervalS === 'number' && ingest.timeoutS > pollIntervalS) {
      errors.push(`ingest.timeoutS: expected at most pollIntervalS (${pollIntervalS}), got ${ingest.timeoutS}`);
    }
    checkSecretFile(ingest.secretFile, 'ingest.secretFile', baseDir, errors, warnings);
  }
  const zones = isRecord(raw.zones) ? new Set(Object.keys(raw.zones)) : undefined;
  if (zones && zones.size === 0) errors.push('zones: expected at least one zone');
  if (Array.isArray(raw.accessPoints)) {
    if (raw.accessPoints.length === 0) errors.push('accessPoints: expected at least one access point');
    const names = new Map<string, NameUse>();
    raw.accessPoints.forEach((ap, i) => {
      if (!isRecord(ap)) return;
      const at = `accessPoints[${i}]`;
      errors.push(...checkApNames(ap, i, names));
      const dialect = typeof ap.dialect === 'string' ? options.dialects.get(ap.dialect) : undefined;
      if (dialect?.apIdentity === 'mac' && isRecord(ap.apZones)) errors.push(...checkApMacs(ap.apZones, at, String(ap.dialect)));
      errors.push(...checkAccessPoint(ap, at, zones, options.dialects, baseDir, warnings));
    });
  }
  errors.push(...checkTrackerMemory(raw.tracker, pollIntervalS));
  if (Array.isArray(raw.sensors)) {
    const ids = new Map<string, number>();
    raw.sensors.forEach((sensor, i) => {
      if (!isRecord(sensor)) return;
      const at = `sensors[${i}]`;
      if (typeof sensor.sensorId === 'string') {
        const first = ids.get(sensor.sensorId);
        if (first !== undefined) errors.push(`${at}.sensorId: "${sensor.sensorId}" is already used by sensors[${first}]; sensor ids must be unique`);
        else ids.set(sensor.sensorId, i);
      }
      if (typeof sensor.zone === 'string' && zones && !zones.has(sensor.zone)) {
        errors.push(`${at}.zone: "${sensor.zone}" is not a zone declared under zones (have: ${[...zones].join(', ')})`);
      }
      if (typeof sensor.metric === 'string') {
        const metric = metricOf(sensor.metric);
        if (!metric) errors.push(`${at}.metric: "${sensor.metric}" is not a metric of the catalog`);
        else if (metric.actions.length === 0) errors.push(`${at}.metric: ${metric.key} declares no actions; only metrics with actions (e.g. temperature) have sensors to drive`);
      }
    });
  }
  return errors;
}

/** Where a name was first used: an AP's own name, or an apZones key (the AP behind it) of that AP. */
interface NameUse {
  index: number;
  key?: string;
}

/**
 * Every name a poll result is reported under belongs to one AP. Two results under one name give two
 * apClients readings with one roomId and timestamp, of which telemetry keeps one; their gateway metrics
 * overwrite each other, and a controller's AP-down state flips each tick. So an AP's name, and each AP
 * behind it (its apZones key and reported name), is checked against every other AP and, within one
 * apZones, against every other key. A controller's own name is not reported once it has apZones, so one
 * of its keys may use it.
 */
function checkApNames(ap: Record<string, unknown>, i: number, names: Map<string, NameUse>): string[] {
  const errors: string[] = [];
  const at = `accessPoints[${i}]`;
  if (typeof ap.name === 'string') {
    const first = names.get(ap.name);
    if (first !== undefined) errors.push(`${at}.name: "${ap.name}" is already used by accessPoints[${first.index}]; AP names must be unique`);
    else names.set(ap.name, { index: i });
  }
  if (!isRecord(ap.apZones)) return errors;
  for (const [identity, entry] of Object.entries(ap.apZones)) {
    const reported = isRecord(entry) && typeof entry.name === 'string' ? entry.name : identity;
    for (const name of new Set([identity, reported])) {
      const first = names.get(name);
      if (first === undefined || (first.index === i && first.key === undefined)) names.set(name, { index: i, key: identity });
      else if (first.index !== i) errors.push(`${at}.apZones.${identity}: "${name}" is already used by accessPoints[${first.index}]; AP names must be unique`);
      else if (first.key !== identity) {
        errors.push(
          `${at}.apZones.${identity}: "${name}" is already the name of ${at}.apZones.${first.key}; give each AP a name of its own (each radio too, e.g. lobby-east-2g and lobby-east-5g), as two APs under one name give two apClients readings with one roomId and one is dropped`,
        );
      }
    }
  }
  return errors;
}

/**
 * apZones keys of a dialect that names APs by MAC are matched as normalised MACs (as the poller does), so
 * two spellings of one MAC (`AA-BB-…`, `aa:bb:…`) are one AP, and the poller would keep only the last.
 */
function checkApMacs(apZones: Record<string, unknown>, at: string, dialect: string): string[] {
  const errors: string[] = [];
  const keys = new Map<string, string>();
  for (const identity of Object.keys(apZones)) {
    const mac = normalizeMac(identity);
    if (mac === undefined) continue;
    const first = keys.get(mac);
    if (first === undefined) keys.set(mac, identity);
    else errors.push(`${at}.apZones.${identity}: the same MAC as ${at}.apZones.${first}, written differently; the ${dialect} dialect matches APs by MAC, so only one of them would be counted; keep one`);
  }
  return errors;
}

/** The tracker may remember at most {@link MAX_TRACKER_MEMORY_S}: its window, and a device's absence. */
function checkTrackerMemory(tracker: unknown, pollIntervalS: unknown): string[] {
  if (!isRecord(tracker)) return [];
  const errors: string[] = [];
  const { transitionWindowS, absentPolls } = tracker;
  if (typeof transitionWindowS === 'number' && transitionWindowS > MAX_TRACKER_MEMORY_S) {
    errors.push(
      `tracker.transitionWindowS: expected at most ${MAX_TRACKER_MEMORY_S} (one day), got ${transitionWindowS}; every move in the window is kept in memory and rewritten to the zone file each poll`,
    );
  }
  if (typeof absentPolls === 'number' && typeof pollIntervalS === 'number' && pollIntervalS > 0) {
    const most = Math.max(1, Math.floor(MAX_TRACKER_MEMORY_S / pollIntervalS));
    if (absentPolls > most) {
      errors.push(
        `tracker.absentPolls: expected at most ${most} (one day of polls at pollIntervalS ${pollIntervalS}), got ${absentPolls}; every device unheard that long is kept in memory, and a randomised MAC is never heard again`,
      );
    }
  }
  return errors;
}

function checkAccessPoint(
  ap: Record<string, unknown>,
  at: string,
  zones: ReadonlySet<string> | undefined,
  dialects: ReadonlyMap<string, DialectInfo>,
  baseDir: string,
  warnings: string[],
): string[] {
  const errors: string[] = [];
  const dialect = typeof ap.dialect === 'string' ? dialects.get(ap.dialect) : undefined;
  if (typeof ap.dialect === 'string' && !dialect) {
    errors.push(`${at}.dialect: expected one of ${[...dialects.keys()].sort().join(', ')}, got ${JSON.stringify(ap.dialect)}`);
  }
  const transport = ap.transport;
  if (dialect && (transport === 'snmp' || transport === 'ssh') && dialect.transport !== transport) {
    errors.push(`${at}.transport: the ${String(ap.dialect)} dialect is read over ${dialect.transport}, got ${transport}`);
  }
  if (transport === 'snmp' && ap.snmp === undefined) errors.push(`${at}.snmp: required for transport snmp (version and credentials files)`);
  if (transport === 'ssh' && ap.ssh === undefined) errors.push(`${at}.ssh: required for transport ssh (username and privateKeyFile)`);
  if (transport === 'snmp' && ap.ssh !== undefined) errors.push(`${at}.ssh: not used with transport snmp; remove it`);
  if (transport === 'ssh' && ap.snmp !== undefined) errors.push(`${at}.snmp: not used with transport ssh; remove it`);

  const checkZone = (zone: unknown, where: string) => {
    if (typeof zone === 'string' && zones && !zones.has(zone)) {
      errors.push(`${where}: "${zone}" is not a zone declared under zones (have: ${[...zones].join(', ')})`);
    }
  };
  if (dialect?.controller) {
    if (!isRecord(ap.apZones) || Object.keys(ap.apZones).length === 0) {
      errors.push(`${at}.apZones: the ${String(ap.dialect)} dialect is a controller; map each AP behind it to a zone`);
    }
  } else if (dialect && ap.apZones !== undefined) {
    if (!dialect.namesApOfStation) {
      errors.push(`${at}.apZones: the ${String(ap.dialect)} dialect does not say which AP carries a station, so its stations cannot be split per AP; set zone instead`);
    } else if (isRecord(ap.apZones) && Object.keys(ap.apZones).length === 0) {
      errors.push(`${at}.apZones: empty; map each AP (radio) to a zone, or remove apZones and set zone`);
    }
  }
  // With apZones, each AP's zone is given there, and stations of APs not listed are not counted.
  if (dialect && !dialect.controller && ap.zone === undefined && ap.apZones === undefined) errors.push(`${at}.zone: required (the zone this AP covers)`);
  checkZone(ap.zone, `${at}.zone`);
  if (isRecord(ap.apZones)) {
    for (const [identity, entry] of Object.entries(ap.apZones)) {
      const zone = isRecord(entry) ? entry.zone : entry;
      checkZone(zone, `${at}.apZones.${identity}${isRecord(entry) ? '.zone' : ''}`);
      const named = isRecord(entry) && typeof entry.name === 'string';
      if (!named && looksLikeIdentifier(identity)) {
        errors.push(`${at}.apZones.${identity}: an AP keyed by MAC needs a name for its apClients readings; write { zone: ${typeof zone === 'string' ? zone : '<zone>'}, name: <a readable AP name> }`);
      } else if (!named && !NAME_FOR_REPORTS.test(identity)) {
        errors.push(`${at}.apZones.${identity}: this AP name cannot be sent as a roomId (letters, digits, space . _ - only); add name: <a readable AP name>`);
      }
    }
  }

  const snmp = ap.snmp;
  if (isRecord(snmp)) {
    const version = snmp.version === 3 ? '3' : snmp.version;
    if (version === '2c' && snmp.communityFile === undefined) errors.push(`${at}.snmp.communityFile: required for SNMP v2c`);
    if (version === '3') {
      if (typeof snmp.user !== 'string' || snmp.user === '') errors.push(`${at}.snmp.user: required for SNMP v3`);
      if (snmp.authKeyFile === undefined) errors.push(`${at}.snmp.authKeyFile: required for SNMP v3 (authNoPriv or authPriv)`);
      if (snmp.communityFile !== undefined) errors.push(`${at}.snmp.communityFile: not used with SNMP v3; remove it`);
      // without the key the session would quietly run authNoPriv, not the privacy the file asks for
      if (snmp.privProtocol !== undefined && snmp.privKeyFile === undefined) errors.push(`${at}.snmp.privKeyFile: required when privProtocol is set (authPriv); or remove privProtocol`);
      if (snmp.privProtocol === 'des' && !cipherAvailable('des-cbc')) {
        errors.push(`${at}.snmp.privProtocol: des is not available in this runtime (OpenSSL 3 dropped DES to its legacy provider), so every poll would fail; set the AP to AES and use privProtocol: aes`);
      }
    }
    if (version === '2c') {
      for (const key of ['user', 'authKeyFile', 'privKeyFile', 'authProtocol', 'privProtocol']) {
        if (snmp[key] !== undefined) errors.push(`${at}.snmp.${key}: only used with SNMP v3; remove it or set version: 3`);
      }
    }
    for (const key of ['communityFile', 'authKeyFile', 'privKeyFile']) checkSecretFile(snmp[key], `${at}.snmp.${key}`, baseDir, errors, warnings);
  }
  const ssh = ap.ssh;
  if (isRecord(ssh)) {
    checkSecretFile(ssh.privateKeyFile, `${at}.ssh.privateKeyFile`, baseDir, errors, warnings);
    // Without a pin the poller trusts whatever host answers at this address; say so where it is seen.
    if (ssh.hostKeySha256 === undefined) {
      warnings.push(`${at}.ssh.hostKeySha256: not set, so any host key this AP presents is accepted; pin it (ssh-keygen -l -E sha256 -f <the AP host key .pub>)`);
    }
  }
  return errors;
}

/** Whether this runtime's crypto can run `cipher` (net-snmp encrypts with it through node:crypto). */
function cipherAvailable(cipher: string): boolean {
  try {
    createCipheriv(cipher, Buffer.alloc(8), Buffer.alloc(8));
    return true;
  } catch {
    return false;
  }
}

/**
 * A secret file must be a readable regular file holding more than whitespace: an empty key would be used
 * as it is (the ingest would sign with it and every batch be refused). One others can read is a warning.
 * The value is named only once it is known to be a file that is there: until then it may be the secret
 * written in place of its path, and error lines reach the journal, the reload's log line and doctor.
 */
function checkSecretFile(value: unknown, at: string, baseDir: string, errors: string[], warnings: string[]): void {
  // a value the codec refuses (empty, multi-line, a PEM key folded by YAML…) is reported there, unshown
  if (!SecretFilePath.is(value)) return;
  const path = resolve(baseDir, value);
  let stat: Stats;
  try {
    stat = statSync(path);
  } catch (err) {
    errors.push(`${at}: ${notThere((err as NodeJS.ErrnoException).code)} (a relative path is read from ${baseDir}; the value is not shown, in case it is the secret itself)`);
    return;
  }
  if (!stat.isFile()) {
    errors.push(`${at}: ${path} is not a regular file`);
    return;
  }
  try {
    accessSync(path, constants.R_OK);
    // never echoed: what is there may be part of a secret
    if (readFileSync(path, 'utf8').trim() === '') errors.push(`${at}: ${path} holds no secret`);
    // Group read is how the service user reads a root-owned secret (root:lintel-edge 0640); more is too much.
    if ((stat.mode & 0o027) !== 0) warnings.push(`${at}: ${path} is open to others (mode ${(stat.mode & 0o777).toString(8)}); chmod 600 or 640 it`);
  } catch (err) {
    // A file that is there but unreadable is named, so it can be found.
    const code = (err as NodeJS.ErrnoException).code;
    errors.push(`${at}: cannot read ${path} (${code === 'EACCES' ? 'permission denied' : (code ?? 'error')})`);
  }
}

/** Why a secret file's path led to no file, in words that hold nothing of the path (stat's errno). */
function notThere(code: string | undefined): string {
  if (code === 'ENOENT' || code === 'ENOTDIR') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'cannot reach the file: permission denied on a directory on its way';
  if (code === 'ENAMETOOLONG') return 'cannot look at the file: its path is too long for the system (ENAMETOOLONG)';
  return `cannot look at the file (${code ?? 'error'})`;
}
