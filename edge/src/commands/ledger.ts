/**
 * `lintel-edge ledger verify|audit|export`: the auditor's commands, read-only over the ledger file.
 * - verify: the hash chain is intact (no entry edited, removed, inserted or reordered);
 * - audit: every byte of every entry is an aggregate (see report/audit.ts); exits 1 on any finding;
 * - export: the entries as JSON lines, `body` being the exact bytes that were sent, so anyone can recompute
 *   hash = sha256(prevHash + body).
 */
import { existsSync } from 'node:fs';
import { auditBody } from '../report/audit.js';
import { openLedger, type Ledger } from '../report/ledger.js';
import { StorageError } from '../storage/sqlite.js';
import type { CommandIo } from './common.js';

export type LedgerAction = 'verify' | 'audit' | 'export';

function open(path: string, io: CommandIo): Ledger | undefined {
  if (!existsSync(path)) {
    io.err(`lintel-edge: no ledger at ${path}\n`);
    return undefined;
  }
  try {
    const ledger = openLedger(path, { readonly: true });
    ledger.head();
    return ledger;
  } catch (err) {
    io.err(`lintel-edge: ${path} is not a readable lintel-edge ledger (${err instanceof StorageError ? err.message : (err as Error).message})\n`);
    return undefined;
  }
}

/** Runs one ledger action over the file at `path`; resolves with the exit code. */
export function ledgerCommand(action: LedgerAction, path: string, io: CommandIo, options: { fromSeq?: number } = {}): number {
  const ledger = open(path, io);
  if (!ledger) return 2;
  try {
    if (action === 'verify') return verify(ledger, path, io);
    if (action === 'audit') return audit(ledger, path, io);
    return exportEntries(ledger, io, options.fromSeq ?? 0);
  } finally {
    ledger.close();
  }
}

function verify(ledger: Ledger, path: string, io: CommandIo): number {
  const start = ledger.start();
  const verdict = ledger.verify();
  if (verdict.ok) {
    const from = start.seq === 0 ? 'the start' : `checkpoint seq ${start.seq} (older entries pruned)`;
    io.out(
      verdict.entries === 0
        ? `ledger ${path}: empty, chain intact from ${from}\n`
        : `ledger ${path}: ${verdict.entries} entries, chain intact from ${from} to seq ${verdict.head.seq}\nhead: seq ${verdict.head.seq} ${verdict.head.hash}\n`,
    );
    return 0;
  }
  io.out(`ledger ${path}: chain BROKEN (${verdict.problems.length} problem${verdict.problems.length === 1 ? '' : 's'} in ${verdict.entries} entries)\n`);
  for (const p of verdict.problems) io.out(`  seq ${p.seq}: ${p.problem}\n`);
  return 1;
}

function audit(ledger: Ledger, path: string, io: CommandIo): number {
  let entries = 0;
  let readings = 0;
  let findings = 0;
  let bytes = 0;
  for (const entry of ledger.entries()) {
    entries++;
    bytes += Buffer.byteLength(entry.body);
    const found = auditBody(entry.body);
    try {
      const parsed = JSON.parse(entry.body) as { readings?: unknown };
      if (Array.isArray(parsed.readings)) readings += parsed.readings.length;
    } catch {
      // reported by auditBody
    }
    for (const f of found) io.out(`seq ${entry.seq} ${f.path}: ${f.kind}: ${f.detail}\n`);
    findings += found.length;
  }
  if (findings > 0) {
    io.out(`audit FAILED: ${findings} finding${findings === 1 ? '' : 's'} in ${entries} entries of ${path}\n`);
    return 1;
  }
  io.out(`audit passed: ${entries} entries, ${readings} readings, ${bytes} bytes in ${path}; every value is a declared aggregate field, nothing identifier-like\n`);
  return 0;
}

function exportEntries(ledger: Ledger, io: CommandIo, fromSeq: number): number {
  for (const entry of ledger.entries(fromSeq)) {
    io.out(
      `${JSON.stringify({
        seq: entry.seq,
        createdAt: new Date(entry.createdAt).toISOString(),
        prevHash: entry.prevHash,
        hash: entry.hash,
        delivery: entry.delivery,
        body: entry.body,
      })}\n`,
    );
  }
  return 0;
}
