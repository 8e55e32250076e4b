/**
 * Reading a dialect's station table: which columns to walk, and how walked cells become sightings; and a
 * controller's AP status table: which APs are joined and up. The decoders are pure (plain cells in, plain
 * rows out), so every dialect is testable with data.
 */
import { INDEX_PART_SUB_IDS, type ApStatusTableSpec, type SnmpTableSpec } from '../dialects.js';
import { macFromOctets, normalizeMac } from '../mac.js';
import type { SnmpCell, SnmpSession, SnmpValue } from './session.js';

/** One decoded row: a station as one AP hears it, the signal still in the dialect's unit. */
export interface TableSighting {
  mac: string;
  /** NaN when the row has no signal cell, or one that is not a number: the station is listed all the same. */
  signal: number;
  /** AP name or AP MAC (normalised), when the table says which AP heard the station. */
  apIdentity?: string;
}

export interface DecodedTable {
  sightings: TableSighting[];
  /** Rows seen in the walk (by index). */
  rows: number;
  /** Rows that could not be read (bad index, bad MAC). */
  skipped: number;
  /** Rows dropped because the AP last heard the station too long ago. */
  stale: number;
}

/** Cells of one walked column, keyed by the row index (the OID after `<entry>.<column>.`). */
export type WalkedColumns = ReadonlyMap<number, ReadonlyMap<string, SnmpValue>>;

/** The columns a walk needs: signal always; station, identity and freshness when the spec takes them from columns. */
export function columnsToWalk(spec: SnmpTableSpec, withIdentity: boolean): number[] {
  const columns = new Set<number>([spec.signal.column]);
  if ('column' in spec.station) columns.add(spec.station.column);
  if (withIdentity && spec.apIdentity && 'column' in spec.apIdentity) columns.add(spec.apIdentity.column);
  if (spec.lastHeard) columns.add(spec.lastHeard.column);
  return [...columns].sort((a, b) => a - b);
}

/**
 * Walks the needed columns of a table concurrently (one GETBULK subtree walk per column on the same
 * session), and keys each column's cells by row index.
 */
export async function walkStationTable(
  session: SnmpSession,
  spec: SnmpTableSpec,
  options: { withIdentity: boolean; maxRepetitions: number },
): Promise<WalkedColumns> {
  return walkColumns(session, spec.oid, columnsToWalk(spec, options.withIdentity), options.maxRepetitions);
}

/** Walks a controller's AP status table: the AP identity and status columns, as {@link walkStationTable} does. */
export async function walkApStatusTable(session: SnmpSession, spec: ApStatusTableSpec, options: { maxRepetitions: number }): Promise<WalkedColumns> {
  return walkColumns(session, spec.oid, [spec.apIdentity.column, spec.status.column], options.maxRepetitions);
}

async function walkColumns(session: SnmpSession, entryOid: string, columns: readonly number[], maxRepetitions: number): Promise<WalkedColumns> {
  const walked = await Promise.all(
    columns.map(async (column) => {
      const prefix = `${entryOid}.${column}.`;
      const cells = await session.walk(`${entryOid}.${column}`, maxRepetitions);
      return [column, indexCells(cells, prefix)] as const;
    }),
  );
  return new Map(walked);
}

function indexCells(cells: readonly SnmpCell[], prefix: string): Map<string, SnmpValue> {
  const byIndex = new Map<string, SnmpValue>();
  for (const cell of cells) {
    if (cell.oid.startsWith(prefix)) byIndex.set(cell.oid.slice(prefix.length), cell.value);
  }
  return byIndex;
}

/** Where each index part starts in the index sub-ids, and how many sub-ids a row index has. */
function indexLayout(spec: SnmpTableSpec): { offsets: Map<string, number>; length: number } {
  const offsets = new Map<string, number>();
  let at = 0;
  for (const part of spec.index) {
    offsets.set(part.name, at);
    at += INDEX_PART_SUB_IDS[part.kind];
  }
  return { offsets, length: at };
}

/** The index sub-ids, or undefined when there are not `length` non-negative integers. */
function indexIds(index: string, length: number): number[] | undefined {
  const ids = index.split('.');
  if (ids.length !== length) return undefined;
  const values = new Array<number>(length);
  for (let i = 0; i < length; i++) {
    const id = Number(ids[i]);
    if (!Number.isInteger(id) || id < 0) return undefined;
    values[i] = id;
  }
  return values;
}

function macOf(value: SnmpValue | undefined): string | undefined {
  if (value === undefined || value === null || typeof value === 'boolean' || typeof value === 'number') return undefined;
  return normalizeMac(value);
}

/**
 * The longest AP name read from a controller, in bytes once trailing NULs are dropped. Controllers cap
 * names far below this (Cisco's bsnAPName at 32 characters); a longer value is no name an apZones key
 * could hold, and is read as no name at all.
 */
export const MAX_AP_NAME_BYTES = 255;

/**
 * The bytes before the NULs some agents pad a name with, C-style. A scan from the end, not a regex: on a
 * value of NULs that ends in another byte, `/\0+$/` retried from every NUL, and an OCTET STRING of 65,000
 * of them took seconds, hundreds of them fitting one poll.
 */
function withoutTrailingNuls(bytes: Buffer): Buffer {
  let end = bytes.length;
  while (end > 0 && bytes[end - 1] === 0) end--;
  return bytes.subarray(0, end);
}

/** An AP name as text, trimmed; undefined when it is empty or longer than {@link MAX_AP_NAME_BYTES}. */
function textOf(value: SnmpValue | undefined): string | undefined {
  let text: string;
  if (Buffer.isBuffer(value)) {
    const bytes = withoutTrailingNuls(value);
    if (bytes.length > MAX_AP_NAME_BYTES) return undefined;
    text = bytes.toString('utf8');
  } else if (typeof value === 'string') {
    if (Buffer.byteLength(value) > MAX_AP_NAME_BYTES) return undefined;
    text = value;
  } else return undefined;
  text = text.trim();
  return text === '' ? undefined : text;
}

/**
 * Turns walked columns into sightings, by the dialect's table spec.
 *
 * @example
 * decodeStationTable(arubaTable, new Map([[14, new Map([['4.211.176.18.52.86', 40]])]]));
 * // { sightings: [{ mac: '04:d3:b0:12:34:56', signal: 40 }], rows: 1, skipped: 0, stale: 0 }
 */
export function decodeStationTable(spec: SnmpTableSpec, walked: WalkedColumns): DecodedTable {
  const signalColumn = walked.get(spec.signal.column) ?? new Map<string, SnmpValue>();
  const stationColumn = 'column' in spec.station ? walked.get(spec.station.column) : undefined;
  const identity = spec.apIdentity;
  const identityColumn = identity && 'column' in identity ? walked.get(identity.column) : undefined;
  const lastHeardColumn = spec.lastHeard ? walked.get(spec.lastHeard.column) : undefined;

  // A row is any index one of the table's walked columns lists: a row the agent gives a MAC, an AP or a
  // last-heard time but no signal cell is a station listed without a reading, not a missing one.
  const indexes = new Set(signalColumn.keys());
  for (const column of [stationColumn, identityColumn, lastHeardColumn]) {
    if (column) for (const index of column.keys()) indexes.add(index);
  }

  const layout = indexLayout(spec);
  const stationAt = 'index' in spec.station ? layout.offsets.get(spec.station.index) : undefined;
  const identityAt = identity && 'index' in identity ? layout.offsets.get(identity.index) : undefined;

  const sightings: TableSighting[] = [];
  let skipped = 0;
  let stale = 0;
  for (const index of indexes) {
    const ids = indexIds(index, layout.length);
    const mac = stationAt !== undefined ? ids && macFromOctets(ids, stationAt) : macOf(stationColumn?.get(index));
    if (!ids || mac === undefined) {
      skipped++;
      continue;
    }
    if (spec.lastHeard && lastHeardColumn) {
      const age = lastHeardColumn.get(index);
      if (typeof age === 'number' && age > spec.lastHeard.maxSeconds) {
        stale++;
        continue;
      }
    }
    const signal = signalColumn.get(index);
    const sighting: TableSighting = { mac, signal: typeof signal === 'number' ? signal : Number.NaN };
    if (identityAt !== undefined) {
      const apMac = macFromOctets(ids, identityAt);
      if (apMac) sighting.apIdentity = apMac;
    } else if (identity && 'column' in identity && identityColumn) {
      const raw = identityColumn.get(index);
      const apIdentity = identity.format === 'mac' ? macOf(raw) : textOf(raw);
      if (apIdentity) sighting.apIdentity = apIdentity;
    }
    sightings.push(sighting);
  }
  return { sightings, rows: indexes.size, skipped, stale };
}

/** What a controller says of one AP joined to it. */
export interface ApState {
  /** Its status is one of the dialect's `up` values. */
  up: boolean;
  /** The status value; undefined when the row has none, or not an integer. */
  value: number | undefined;
}

export interface DecodedApStatus {
  /** By AP identity (name, or normalised MAC), as the station table names the AP. */
  aps: Map<string, ApState>;
  /** Rows seen in the walk (by index); 0 when the controller lists no AP at all. */
  rows: number;
}

/**
 * Turns a walked AP status table into the state of each AP, by identity.
 *
 * @example
 * decodeApStatusTable(bsnAPTable, new Map([[3, new Map([['0.58.154.17.34.1', Buffer.from('AP-Lobby-1')]])], [6, new Map([['0.58.154.17.34.1', 1]])]]));
 * // { aps: Map { 'AP-Lobby-1' => { up: true, value: 1 } }, rows: 1 }
 */
export function decodeApStatusTable(spec: ApStatusTableSpec, walked: WalkedColumns): DecodedApStatus {
  const identities = walked.get(spec.apIdentity.column) ?? new Map<string, SnmpValue>();
  const statuses = walked.get(spec.status.column) ?? new Map<string, SnmpValue>();
  const indexes = new Set([...identities.keys(), ...statuses.keys()]);
  const aps = new Map<string, ApState>();
  for (const index of indexes) {
    const raw = identities.get(index);
    const identity = spec.apIdentity.format === 'mac' ? macOf(raw) : textOf(raw);
    if (identity === undefined) continue;
    const status = statuses.get(index);
    const value = typeof status === 'number' && Number.isInteger(status) ? status : undefined;
    // one AP on two rows (a leftover entry beside the current one): up wins, the controller serves it
    if (aps.get(identity)?.up) continue;
    aps.set(identity, { up: value !== undefined && spec.status.up.includes(value), value });
  }
  return { aps, rows: indexes.size };
}
