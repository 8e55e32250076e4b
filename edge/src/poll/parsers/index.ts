/**
 * The generic SSH output parsers, by the name a dialect file uses in `parser`.
 */
import { parseIwStationDump } from './iw-station-dump.js';
import { parseMcaDump } from './mca-dump-json.js';
import type { StationParser } from './types.js';
import { parseUbusClients } from './ubus-clients-json.js';

export const PARSER_NAMES = ['iw-station-dump', 'ubus-clients-json', 'mca-dump-json'] as const;

export const PARSERS: Readonly<Record<(typeof PARSER_NAMES)[number], StationParser>> = {
  'iw-station-dump': parseIwStationDump,
  'ubus-clients-json': parseUbusClients,
  'mca-dump-json': parseMcaDump,
};

export { parseIwStationDump, parseMcaDump, parseUbusClients };
export { ParseError, type ParsedStations, type RawStation, type StationParser } from './types.js';
