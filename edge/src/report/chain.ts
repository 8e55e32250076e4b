/**
 * The ledger's hash chain, as pure functions: entry n's hash is sha256(hash of entry n-1 + body n), so
 * editing, removing or reordering any entry breaks every hash after it.
 */
import { createHash } from 'node:crypto';

export const GENESIS_HASH = '0'.repeat(64);

/** One ledger entry as stored and exported. */
export interface LedgerEntry {
  seq: number;
  /** Epoch ms when it was appended. */
  createdAt: number;
  prevHash: string;
  hash: string;
  body: string;
  /**
   * How the post went (accepted, rejected, unreachable, kept, interrupted; null while its outcome is not
   * recorded, see ledger.ts); informational, not chained.
   */
  delivery: string | null;
}

/** Where a chain starts: the genesis, or the last entry pruned from it. */
export interface ChainStart {
  seq: number;
  hash: string;
}

export const GENESIS: ChainStart = Object.freeze({ seq: 0, hash: GENESIS_HASH });

/**
 * The hash of an entry.
 *
 * @example
 * chainHash(GENESIS_HASH, '{"batchId":"hq@…","readings":[]}'); // 64 hex characters
 */
export function chainHash(prevHash: string, body: string): string {
  return createHash('sha256').update(prevHash).update(body).digest('hex');
}

export interface ChainProblem {
  seq: number;
  problem: string;
}

export type ChainVerdict =
  | { ok: true; entries: number; head: ChainStart }
  | { ok: false; entries: number; problems: ChainProblem[] };

/**
 * Walks entries in seq order from `start` and reports every break: an entry at or before the start (an
 * inserted row the chain cannot hold, such as a negative seq), a missing seq (deleted entry), a prev_hash
 * that is not the previous hash (deleted, inserted or reordered entry), or a hash that does not match the
 * body (edited entry).
 */
export function verifyChain(entries: Iterable<LedgerEntry>, start: ChainStart = GENESIS): ChainVerdict {
  const problems: ChainProblem[] = [];
  let expectedSeq = start.seq + 1;
  let previous = start.hash;
  let count = 0;
  let head = start;
  for (const entry of entries) {
    count++;
    if (!Number.isSafeInteger(entry.seq) || entry.seq <= start.seq) {
      // Not a link of the chain: reported, and skipped so the entries after it are judged on their own.
      problems.push({ seq: entry.seq, problem: `not part of the chain, which starts after seq ${start.seq} (an inserted row?)` });
      continue;
    }
    if (entry.seq !== expectedSeq) {
      problems.push({
        seq: entry.seq,
        problem:
          entry.seq > expectedSeq
            ? `entries ${expectedSeq}${entry.seq - 1 > expectedSeq ? `–${entry.seq - 1}` : ''} are missing (deleted?)`
            : `out of order: expected seq ${expectedSeq}`,
      });
    }
    if (entry.prevHash !== previous) problems.push({ seq: entry.seq, problem: 'prev_hash does not match the previous entry (an entry before it was changed, removed or inserted)' });
    const recomputed = chainHash(entry.prevHash, entry.body);
    if (recomputed !== entry.hash) problems.push({ seq: entry.seq, problem: 'hash does not match the body (the entry was edited)' });
    // Continue from the stored hash, so one tampered entry is reported once, not for every later entry.
    previous = entry.hash;
    expectedSeq = entry.seq + 1;
    head = { seq: entry.seq, hash: entry.hash };
  }
  return problems.length === 0 ? { ok: true, entries: count, head } : { ok: false, entries: count, problems };
}
