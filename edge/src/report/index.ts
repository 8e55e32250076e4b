/**
 * Reporting: one batch of aggregate readings per tick, validated against the catalog, signed and posted,
 * and kept in a hash-chained export ledger that `ledger verify` and `ledger audit` check.
 */
export { batchIdOf, buildReadings, encodeBatch, peopleFromDevices } from './readings.js';
export type { BuiltReadings, TickAggregates, ZoneSettings } from './readings.js';
export { createBatchPoster } from './poster.js';
export type { BatchPoster, PostOutcome, PosterOptions } from './poster.js';
export { openLedger } from './ledger.js';
export type { Delivery, Ledger } from './ledger.js';
export { chainHash, GENESIS, GENESIS_HASH, verifyChain } from './chain.js';
export type { ChainProblem, ChainStart, ChainVerdict, LedgerEntry } from './chain.js';
export { auditBody } from './audit.js';
export type { AuditFinding, FindingKind } from './audit.js';
export { identifierKind, looksLikeIdentifier, masked } from './identifiers.js';
