/**
 * Polling access points: the public surface for the collector, `doctor` and the simulator.
 */
export type { AccessPoint, ApPollResult, Poller, PollFailureReason, SnmpTarget, SshTarget, StationSighting } from './types.js';
export { createPoller, checkAccessPoint, loudestPerMac, type PollerOptions } from './poller.js';
export {
  BUILTIN_DIALECT_DIR,
  DialectError,
  dialectsFromFiles,
  loadDialects,
  parseDialect,
  type Dialect,
  type DialectCatalog,
  type ParserName,
  type SignalUnit,
  type SnmpDialect,
  type SnmpTableSpec,
  type SshDialect,
} from './dialects.js';
export { macFromOctets, normalizeMac, scrubMacs } from './mac.js';
export { toDbm } from './signal.js';
export { PARSERS, PARSER_NAMES, ParseError, type ParsedStations, type RawStation } from './parsers/index.js';
export { openNetSnmpSession, type OpenSnmpSession, type SnmpCell, type SnmpSession, type SnmpValue } from './snmp/session.js';
export { columnsToWalk, decodeStationTable, walkStationTable, type DecodedTable, type TableSighting, type WalkedColumns } from './snmp/table.js';
export { fingerprintOf, normalizeFingerprint, openSsh2Session, SshError, type ExecResult, type OpenSshSession, type SshSession } from './ssh/session.js';
