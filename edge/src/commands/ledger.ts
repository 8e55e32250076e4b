/**
 * `lintel-edge ledger verify|audit|export`: the auditor's commands, read-only over the ledger file.
 * - verify: the hash chain is intact (no entry edited, removed, inserted or reordered);
 * - audit: every byte of every entry is an aggregate (see report/audit.ts), and the hash chain over them
 *   is intact (checked in the same snapshot, a broken link being a finding); exits 1 on any finding; it
 *   also counts the entries by delivery. Findings are printed as printable lines: a body may hold keys
 *   made of terminal commands;
 * - export: the entries as JSON lines, `body` being the exact bytes that were sent, so anyone can recompute
 *   hash = sha256(prevHash + body), and `delivery` how the post went: accepted, rejected, unreachable,
 *   kept (no ingest), interrupted (the gateway stopped before the post's outcome was known: it may or may
 *   not have reached the ingest), or null (a post in flight, or one cut short by a stop the gateway has
 *   not been restarted since). See report/ledger.ts.
 * With `fromSeq`, each looks only at the entries from that seq on; verify then anchors the chain on the
 * stored hash of the entry before it, and says so.
 * The file may be in use by the collector: reads wait for its locks (see storage/sqlite.ts), and one that
 * still fails ends the command with a message (exit 2), not a stack trace. So does a ledger this user
 * cannot reach (the service user's state directory, mode 700): the message names the directory's owner
 * to run as, not a missing ledger, in a command whose values are quoted for the shell.
 */
import { statSync } from 'node:fs';
import { dirname } from 'node:path';
import { auditBody } from '../report/audit.js';
import type { LedgerEntry } from '../report/chain.js';
import { INTERRUPTED, openLedger, type Ledger } from '../report/ledger.js';
import { describeOwnership, userNameOf } from '../storage/ownership.js';
import { StorageError } from '../storage/sqlite.js';
import { printableLine } from '../ui/printable.js';
import { shellWord } from '../ui/shell-word.js';
import { runAsCommand } from './cache-directory.js';
import type { CommandIo } from './common.js';

export type LedgerAction = 'verify' | 'audit' | 'export';

/**
 * Why the ledger at `path` cannot even be looked at, or undefined when it is there. A directory on the
 * way that refuses this user (the service user's state directory, mode 700, to an operator's shell) is
 * no missing ledger: it names the directory's owner, whom to run as (the service user with the unit's
 * cache directory, see runAsCommand).
 */
function unreachableLedger(path: string, action: LedgerAction): string | undefined {
  try {
    statSync(path);
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return `no ledger at ${path}`;
    if (code !== 'EACCES' && code !== 'EPERM') return `cannot look for the ledger at ${path} (${code ?? (err as Error).message})`;
    const refusing = deepestVisible(dirname(path));
    const owner = ownerOf(refusing);
    const name = owner === undefined ? undefined : userNameOf(owner);
    const runAs = name ? `run as its owner: ${runAsCommand(name, `ledger ${action} --ledger ${shellWord(path)}`)}` : 'run as its owner';
    return `cannot read the ledger ${path}: permission denied (${code}): ${refusing} is ${describeOwnership(refusing)}; ${runAs}`;
  }
}

/** The deepest of `dir` and its ancestors this user can stat: the one whose mode refuses going further. */
function deepestVisible(dir: string): string {
  let at = dir;
  while (ownerOf(at) === undefined && dirname(at) !== at) at = dirname(at);
  return at;
}

function ownerOf(path: string): number | undefined {
  try {
    return statSync(path).uid;
  } catch {
    return undefined;
  }
}

function open(path: string, action: LedgerAction, io: CommandIo): Ledger | undefined {
  const unreachable = unreachableLedger(path, action);
  if (unreachable) {
    io.err(`lintel-edge: ${unreachable}\n`);
    return undefined;
  }
  try {
    const ledger = openLedger(path, { readonly: true });
    ledger.head();
    return ledger;
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code)) {
      io.err(`lintel-edge: the ledger ${path} is locked by another process (${(err as Error).message}); try again\n`);
    } else {
      io.err(`lintel-edge: ${path} is not a readable lintel-edge ledger (${err instanceof StorageError ? err.message : (err as Error).message})\n`);
    }
    return undefined;
  }
}

/** Runs one ledger action over the file at `path`; resolves with the exit code. */
export function ledgerCommand(action: LedgerAction, path: string, io: CommandIo, options: { fromSeq?: number } = {}): number {
  const ledger = open(path, action, io);
  if (!ledger) return 2;
  try {
    if (action === 'verify') return verify(ledger, path, io, options.fromSeq);
    if (action === 'audit') return audit(ledger, path, io, options.fromSeq);
    return exportEntries(ledger, io, options.fromSeq);
  } catch (err) {
    io.err(`lintel-edge: cannot read the ledger ${path}: ${(err as Error).message}\n`);
    return 2;
  } finally {
    ledger.close();
  }
}

function verify(ledger: Ledger, path: string, io: CommandIo, fromSeq: number | undefined): number {
  // One snapshot: the collector may prune meanwhile, and what is printed must be what was checked.
  const { start, anchor, verdict } = ledger.snapshot(() => {
    const start = ledger.start();
    return { start, anchor: fromSeq === undefined ? start : ledger.anchorOf(fromSeq), verdict: ledger.verify(fromSeq) };
  });
  if (verdict.ok) {
    const from =
      anchor && anchor.seq !== start.seq
        ? `seq ${anchor.seq} ${anchor.hash} (--from-seq ${fromSeq}: entries up to seq ${anchor.seq} not checked)`
        : start.seq === 0
          ? 'the start'
          : `checkpoint seq ${start.seq} (older entries pruned)`;
    io.out(
      verdict.entries === 0
        ? `ledger ${path}: ${fromSeq === undefined ? 'empty' : `no entries from seq ${fromSeq}`}, chain intact from ${from}\n`
        : `ledger ${path}: ${verdict.entries} entries, chain intact from ${from} to seq ${verdict.head.seq}\nhead: seq ${verdict.head.seq} ${verdict.head.hash}\n`,
    );
    return 0;
  }
  io.out(`ledger ${path}: chain BROKEN (${verdict.problems.length} problem${verdict.problems.length === 1 ? '' : 's'} in ${verdict.entries} entries)\n`);
  for (const p of verdict.problems) io.out(`  seq ${p.seq}: ${p.problem}\n`);
  return 1;
}

/** What one audit saw, counted as it was printed. */
interface AuditTally {
  entries: number;
  readings: number;
  bytes: number;
  findings: number;
  /** Of the findings, the problems of the hash chain. */
  chainProblems: number;
  deliveries: Map<string, number>;
}

/**
 * Audits the bodies and checks the hash chain over one snapshot, so the entries audited are the entries
 * whose chain was checked, whatever the collector prunes meanwhile. A body is judged by its bytes, so an
 * entry edited in place with a clean body would pass on its own: only the chain shows that what is in
 * the file is not what was sent, so a broken chain fails the audit as a finding.
 */
function audit(ledger: Ledger, path: string, io: CommandIo, fromSeq: number | undefined): number {
  const scope = fromSeq === undefined ? path : `${path} from seq ${fromSeq}`;
  const tally = ledger.snapshot((): AuditTally => {
    const tally: AuditTally = { entries: 0, readings: 0, bytes: 0, findings: 0, chainProblems: 0, deliveries: new Map() };
    for (const entry of ledger.entries(fromSeq)) auditEntry(entry, tally, io);
    const verdict = ledger.verify(fromSeq);
    if (!verdict.ok) {
      for (const p of verdict.problems) printFinding(io, p.seq, '(chain)', 'broken-chain', p.problem);
      tally.findings += verdict.problems.length;
      tally.chainProblems = verdict.problems.length;
    }
    return tally;
  });
  const delivered = deliveriesLine(tally.deliveries);
  if (tally.findings > 0) {
    const chain = tally.chainProblems > 0 ? ` (${tally.chainProblems} in the hash chain: the file is not what was sent; see ledger verify)` : '';
    io.out(`audit FAILED: ${tally.findings} finding${tally.findings === 1 ? '' : 's'}${chain} in ${tally.entries} entries of ${scope}\n${delivered}`);
    return 1;
  }
  io.out(
    `audit passed: ${tally.entries} entries, ${tally.readings} readings, ${tally.bytes} bytes in ${scope}; every value is a declared aggregate field, nothing identifier-like; hash chain intact\n${delivered}`,
  );
  return 0;
}

/** Audits one entry's body, printing its findings and counting it. */
function auditEntry(entry: LedgerEntry, tally: AuditTally, io: CommandIo): void {
  tally.entries++;
  tally.bytes += Buffer.byteLength(entry.body);
  const delivery = entry.delivery ?? 'no outcome yet';
  tally.deliveries.set(delivery, (tally.deliveries.get(delivery) ?? 0) + 1);
  try {
    const parsed = JSON.parse(entry.body) as { readings?: unknown };
    if (Array.isArray(parsed.readings)) tally.readings += parsed.readings.length;
  } catch {
    // reported by auditBody
  }
  const found = auditBody(entry.body);
  for (const f of found) printFinding(io, entry.seq, f.path, f.kind, f.detail);
  tally.findings += found.length;
}

/**
 * One finding on one line. Its path and detail come from the ledger file, which anyone who can write
 * it can fill: made printable here too, so nothing in a body can command the auditor's terminal.
 */
function printFinding(io: CommandIo, seq: number, path: string, kind: string, detail: string): void {
  io.out(`seq ${seq} ${printableLine(path)}: ${kind}: ${printableLine(detail)}\n`);
}

/** `deliveries: 41 accepted, 1 interrupted (…)`, or nothing for no entries. */
function deliveriesLine(deliveries: ReadonlyMap<string, number>): string {
  if (deliveries.size === 0) return '';
  const counts = [...deliveries].map(([delivery, n]) => `${n} ${delivery}`).join(', ');
  const note = deliveries.has(INTERRUPTED) ? ` (${INTERRUPTED}: the gateway stopped before the post's outcome was known; it may or may not have reached the ingest)` : '';
  return `deliveries: ${counts}${note}\n`;
}

/**
 * An entry's time as ISO-8601, or as stored when it is no time at all: created_at is not chained, so an
 * edited file may hold anything there, and the export must still show every entry.
 */
function exportedTime(createdAt: unknown): unknown {
  if (typeof createdAt !== 'number') return createdAt;
  const time = new Date(createdAt);
  return Number.isNaN(time.getTime()) ? createdAt : time.toISOString();
}

function exportEntries(ledger: Ledger, io: CommandIo, fromSeq: number | undefined): number {
  for (const entry of ledger.entries(fromSeq)) {
    io.out(
      `${JSON.stringify({
        seq: entry.seq,
        createdAt: exportedTime(entry.createdAt),
        prevHash: entry.prevHash,
        hash: entry.hash,
        delivery: entry.delivery,
        body: entry.body,
      })}\n`,
    );
  }
  return 0;
}
