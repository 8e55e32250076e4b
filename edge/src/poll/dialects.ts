/**
 * AP dialects are data: `firmware-bindings/access-points/<dialect>.json` says which SNMP table columns or
 * which SSH command and parser read the stations of one AP family, and in which unit the signal comes.
 * This module decodes and checks those files, so a typo fails at start with its file and path.
 *
 * A controller dialect may also name an `apStatus` table: the controller's list of the APs joined to it,
 * with a column naming each AP (as `apZones` and the station table's `apIdentity` do) and a status
 * column whose `up` values mean the AP is serving clients. With it, an AP behind the controller that is
 * not up, or not listed, fails for the tick (reason `ap_down`) and its devices are frozen. Without it, a
 * controller simply stops listing the clients of an AP that went down, and that AP reads as empty; so
 * it does when the status table lists no AP at all (the agent may not serve it: firmware, SNMP view).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as t from 'io-ts';
import { formatErrors } from '../../../shared/kinds.js';
import { MAX_SNMP_INDEX_IDS } from './limits.js';
import { PARSER_NAMES } from './parsers/index.js';

/** Where the dialects shipped with Lintel live. */
export const BUILTIN_DIALECT_DIR = fileURLToPath(new URL('../../../firmware-bindings/access-points/', import.meta.url));

/** A value that may not be there: an unknown key in a dialect file is an error, not silently ignored. */
const UnknownKey = new t.Type<never, never, unknown>(
  'nothing (unknown key; check the spelling)',
  (_u): _u is never => false,
  (u, c) => t.failure(u, c),
  (a) => a,
);

/** `t.type` plus optional keys, refusing keys it does not declare. */
function closed<R extends t.Props, O extends t.Props>(name: string, required: R, optional: O) {
  const base = t.intersection([t.type(required), t.partial(optional)], name);
  return new t.Type<t.TypeOf<typeof base>, t.OutputOf<typeof base>, unknown>(
    name,
    base.is,
    (input, context) => {
      if (typeof input === 'object' && input !== null && !Array.isArray(input)) {
        const extra = Object.keys(input).filter((key) => !(key in required) && !(key in optional));
        if (extra.length > 0) {
          return t.failures(
            extra.map((key) => ({
              value: (input as Record<string, unknown>)[key],
              context: [...context, { key, type: UnknownKey, actual: (input as Record<string, unknown>)[key] }],
            })),
          );
        }
      }
      // present the intersection as the node itself, so error paths read `tables[0].signal`, not `0.signal`
      const last = context[context.length - 1];
      return base.validate(input, last ? [...context.slice(0, -1), { ...last, type: base }] : context);
    },
    base.encode,
  );
}

const Text = t.string;
const Oid = new t.Type<string, string, unknown>(
  'a dotted numeric OID such as 1.3.6.1.4.1.14179.2.1.11.1',
  (u): u is string => typeof u === 'string' && /^\d+(\.\d+)+$/.test(u),
  (u, c) => (typeof u === 'string' && /^\d+(\.\d+)+$/.test(u) ? t.success(u) : t.failure(u, c)),
  t.identity,
);
const ColumnNumber = new t.Type<number, number, unknown>(
  'a column number (an integer from 1)',
  (u): u is number => typeof u === 'number' && Number.isInteger(u) && u >= 1,
  (u, c) => (typeof u === 'number' && Number.isInteger(u) && u >= 1 ? t.success(u) : t.failure(u, c)),
  t.identity,
);

const StatusValue = new t.Type<number, number, unknown>(
  'an integer status value',
  (u): u is number => typeof u === 'number' && Number.isInteger(u),
  (u, c) => (typeof u === 'number' && Number.isInteger(u) ? t.success(u) : t.failure(u, c)),
  t.identity,
);

const IndexPart = closed('IndexPart', { name: Text, kind: t.keyof({ mac: null, int: null }) }, {});
/** The sub-ids each kind of index part takes in a row's OID: a MAC in 6 octets, an int in one. */
export const INDEX_PART_SUB_IDS = { mac: 6, int: 1 } as const;
const ColumnRef = closed('ColumnRef', { column: ColumnNumber, name: Text }, {});
const IndexRef = closed('IndexRef', { index: Text }, {});
const FieldRef = t.union([IndexRef, ColumnRef]);
const IdentityColumn = closed('IdentityColumn', { column: ColumnNumber, name: Text, format: t.keyof({ text: null, mac: null }) }, {});
const IdentityRef = t.union([IndexRef, IdentityColumn]);
const LastHeard = closed('LastHeard', { column: ColumnNumber, name: Text, maxSeconds: t.number }, {});

const SignalUnit = t.union([
  closed('DbmSignal', { unit: t.literal('dBm') }, {}),
  closed('SnrSignal', { unit: t.literal('SNR'), noiseFloorDbm: t.number }, {}),
]);

const SnmpTable = closed(
  'SnmpTable',
  { name: Text, oid: Oid, index: t.array(IndexPart), station: FieldRef, signal: ColumnRef },
  { apIdentity: IdentityRef, lastHeard: LastHeard },
);

/** The status column of an AP status table: which values mean the AP is up, and (for messages) their names. */
const ApStatusColumn = closed('ApStatusColumn', { column: ColumnNumber, name: Text, up: t.array(StatusValue) }, { states: t.record(t.string, Text) });

/** A controller's table of the APs joined to it, one row per AP. */
const ApStatusTable = closed('ApStatusTable', { name: Text, oid: Oid, apIdentity: IdentityColumn, status: ApStatusColumn }, {});

const Common = { name: Text, vendor: Text, description: Text, signal: SignalUnit };

const SnmpDialectCodec = closed(
  'SnmpDialect',
  { ...Common, transport: t.literal('snmp'), controller: t.boolean, tables: t.array(SnmpTable) },
  { apStatus: ApStatusTable, notes: t.array(Text) },
);

const SshDialectCodec = closed(
  'SshDialect',
  {
    ...Common,
    transport: t.literal('ssh'),
    command: Text,
    parser: t.keyof(Object.fromEntries(PARSER_NAMES.map((n) => [n, null])) as Record<ParserName, null>),
  },
  { defaultInterface: Text, notes: t.array(Text) },
);

export type ParserName = (typeof PARSER_NAMES)[number];
export type SignalUnit = t.TypeOf<typeof SignalUnit>;
export type SnmpTableSpec = t.TypeOf<typeof SnmpTable>;
export type ApStatusTableSpec = t.TypeOf<typeof ApStatusTable>;
export type SnmpDialect = t.TypeOf<typeof SnmpDialectCodec>;
export type SshDialect = t.TypeOf<typeof SshDialectCodec>;
export type Dialect = SnmpDialect | SshDialect;
/** Dialects by name. */
export type DialectCatalog = ReadonlyMap<string, Dialect>;

/** A dialect file (or several) that cannot be used; `problems` has one `file: path: what` line each. */
export class DialectError extends Error {
  readonly code = 'bad_dialect';
  constructor(readonly problems: string[]) {
    super(`invalid AP dialect definitions:\n  ${problems.join('\n  ')}`);
    this.name = 'DialectError';
  }
}

/** Checks what the codec cannot: references between fields, and sane ranges. */
function crossCheck(dialect: Dialect): string[] {
  const problems: string[] = [];
  if (dialect.signal.unit === 'SNR' && !(dialect.signal.noiseFloorDbm <= -60 && dialect.signal.noiseFloorDbm >= -120)) {
    problems.push(`signal.noiseFloorDbm: expected a noise floor between -120 and -60 dBm, got ${dialect.signal.noiseFloorDbm}`);
  }
  if (dialect.transport === 'ssh') {
    if (dialect.command.trim() === '') problems.push('command: expected a command, got ""');
    return problems;
  }
  if (dialect.tables.length === 0) problems.push('tables: expected at least one table');
  dialect.tables.forEach((table, i) => {
    const at = `tables[${i}]`;
    const names = table.index.map((part) => part.name);
    if (table.index.length === 0) problems.push(`${at}.index: expected at least one index part`);
    const indexIds = table.index.reduce((ids, part) => ids + INDEX_PART_SUB_IDS[part.kind], 0);
    if (indexIds > MAX_SNMP_INDEX_IDS) {
      problems.push(`${at}.index: ${indexIds} sub-ids, more than the ${MAX_SNMP_INDEX_IDS} a walk accepts (a MAC is 6, an int 1)`);
    }
    if (new Set(names).size !== names.length) problems.push(`${at}.index: index part names must be unique`);
    const checkIndexRef = (field: string, ref: { index: string } | object) => {
      if (!('index' in ref)) return;
      const part = table.index.find((p) => p.name === ref.index);
      if (!part) problems.push(`${at}.${field}.index: no index part named "${ref.index}" (have: ${names.join(', ')})`);
      else if (part.kind !== 'mac') problems.push(`${at}.${field}.index: "${ref.index}" is an ${part.kind}, expected a mac`);
    };
    checkIndexRef('station', table.station);
    if (table.apIdentity) checkIndexRef('apIdentity', table.apIdentity);
    if (dialect.controller && !table.apIdentity) {
      problems.push(`${at}.apIdentity: a controller dialect must say which column identifies the AP`);
    }
    if (table.lastHeard && !(table.lastHeard.maxSeconds > 0)) {
      problems.push(`${at}.lastHeard.maxSeconds: expected a positive number of seconds, got ${table.lastHeard.maxSeconds}`);
    }
  });
  const formats = new Set(dialect.tables.map(identityFormat).filter((format) => format !== undefined));
  if (formats.size > 1) {
    problems.push('tables[].apIdentity: expected every table to name the AP alike, all by MAC or all by text (apZones keys must match them all)');
  }
  if (dialect.apStatus) problems.push(...checkApStatus(dialect));
  return problems;
}

/** How a station table names the AP that heard a station: `mac` for an index part, else its column's format. */
function identityFormat(table: SnmpTableSpec): 'text' | 'mac' | undefined {
  if (!table.apIdentity) return undefined;
  return 'index' in table.apIdentity ? 'mac' : table.apIdentity.format;
}

/**
 * How a dialect names the AP that heard a station, which is what apZones keys are matched against: `mac`
 * (normalised `aa:bb:…`) or `text` (as the controller writes the name), or undefined when it does not.
 * Every table of a dialect, and its AP status table, name the AP alike (checked at load).
 *
 * @example
 * apIdentityFormat(dialects.get('cisco-wlc')); // 'text' (bsnMobileStationRssiDataApName)
 */
export function apIdentityFormat(dialect: SnmpDialect): 'text' | 'mac' | undefined {
  for (const table of dialect.tables) {
    const format = identityFormat(table);
    if (format !== undefined) return format;
  }
  return undefined;
}

/** The AP status table: only for controllers, naming APs as the station tables do, with sane status values. */
function checkApStatus(dialect: SnmpDialect): string[] {
  const status = dialect.apStatus;
  if (!status) return [];
  const problems: string[] = [];
  if (!dialect.controller) problems.push('apStatus: only a controller dialect (controller: true) can have an AP status table');
  if (status.apIdentity.column === status.status.column) {
    problems.push(`apStatus.status.column: ${status.status.column} is already the apIdentity column; expected the AP's status column`);
  }
  const up = status.status.up;
  if (up.length === 0) problems.push('apStatus.status.up: expected at least one value that means the AP is up');
  if (new Set(up).size !== up.length) problems.push('apStatus.status.up: values must be unique');
  for (const key of Object.keys(status.status.states ?? {})) {
    if (!/^-?\d+$/.test(key)) problems.push(`apStatus.status.states: expected integer keys (status values), got "${key}"`);
  }
  dialect.tables.forEach((table, i) => {
    const format = identityFormat(table);
    if (format !== undefined && format !== status.apIdentity.format) {
      problems.push(
        `apStatus.apIdentity.format: expected "${format}" as tables[${i}].apIdentity names the AP (apZones keys must match both), got "${status.apIdentity.format}"`,
      );
    }
  });
  return problems;
}

/**
 * Decodes one dialect definition and checks it; `source` (the file name) prefixes every problem.
 *
 * @example
 * parseDialect(JSON.parse(text), 'cisco-wlc.json'); // { ok: true, value: { name: 'cisco-wlc', … } }
 */
export function parseDialect(input: unknown, source: string): { ok: true; value: Dialect } | { ok: false; errors: string[] } {
  const transport = typeof input === 'object' && input !== null ? (input as { transport?: unknown }).transport : undefined;
  const codec = transport === 'ssh' ? SshDialectCodec : transport === 'snmp' ? SnmpDialectCodec : undefined;
  if (!codec) {
    return { ok: false, errors: [`${source}: transport: expected "snmp" or "ssh", got ${JSON.stringify(transport) ?? 'nothing'}`] };
  }
  const decoded = codec.decode(input);
  if (decoded._tag === 'Left') return { ok: false, errors: formatErrors(decoded.left).map((line) => `${source}: ${line}`) };
  const dialect = decoded.right as Dialect;
  const problems = crossCheck(dialect);
  const expectedName = source.replace(/\.json$/, '');
  if (source.endsWith('.json') && dialect.name !== expectedName) {
    problems.push(`name: expected "${expectedName}" (the file name), got "${dialect.name}"`);
  }
  if (problems.length > 0) return { ok: false, errors: problems.map((line) => `${source}: ${line}`) };
  return { ok: true, value: dialect };
}

/**
 * Builds a catalog from file contents (name → JSON text); every problem in every file is reported at once.
 * Useful where the files are embedded rather than on disk.
 */
export function dialectsFromFiles(files: Readonly<Record<string, string>>): DialectCatalog {
  const catalog = new Map<string, Dialect>();
  const problems: string[] = [];
  for (const [file, text] of Object.entries(files).sort(([a], [b]) => a.localeCompare(b))) {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      problems.push(`${file}: not valid JSON (${(err as Error).message})`);
      continue;
    }
    const parsed = parseDialect(json, file);
    if (parsed.ok) catalog.set(parsed.value.name, parsed.value);
    else problems.push(...parsed.errors);
  }
  if (problems.length > 0) throw new DialectError(problems);
  return catalog;
}

/**
 * Loads every `*.json` dialect in a directory (default: the ones shipped in firmware-bindings/access-points).
 * Throws a {@link DialectError} listing every problem in every file.
 *
 * @example
 * const dialects = loadDialects();
 * dialects.get('cisco-wlc')?.transport; // 'snmp'
 */
export function loadDialects(dir: string = BUILTIN_DIALECT_DIR): DialectCatalog {
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => name.endsWith('.json'));
  } catch (err) {
    throw new DialectError([`${dir}: cannot read the dialect directory (${(err as NodeJS.ErrnoException).code ?? 'error'})`]);
  }
  const files: Record<string, string> = {};
  for (const name of names) files[basename(name)] = readFileSync(join(dir, name), 'utf8');
  return dialectsFromFiles(files);
}
