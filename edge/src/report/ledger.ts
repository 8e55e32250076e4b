/**
 * The export ledger in SQLite: every batch body that leaves the gateway is appended before it is posted,
 * so an auditor sees everything that could have left. Kept in its own file, apart from the zone state, so
 * it can be handed over without any device hash.
 *
 * Each entry's delivery says how its post went (informational, not chained):
 * - `accepted`: the ingest took it (2xx `{"accepted": n}`);
 * - `rejected`: the ingest refused it (any other answer); dropped, the next tick supersedes it;
 * - `unreachable`: no answer in time; dropped, the next tick supersedes it;
 * - `kept`: no ingest configured, so it never left;
 * - `interrupted`: the process that appended it stopped (crash, kill, power cut) before it recorded the
 *   post's outcome; marked when the ledger is next opened for writing. The batch may or may not have
 *   reached the ingest; it is not posted again (see markInterrupted);
 * - null: its post is still in flight, or the process stopped mid-post and the ledger was not opened
 *   for writing since.
 */
import { explainStorageFailure, openDatabase, prepareStatements, sqliteCodeOf, StorageError, type SqliteDatabase, type SqliteStatement } from '../storage/sqlite.js';
import { chainHash, GENESIS, verifyChain, type ChainStart, type ChainVerdict, type LedgerEntry } from './chain.js';
import { ledgerMigrations } from './migrations.js';

/** How a post went, as the process that made it records it. */
export type Delivery = 'accepted' | 'rejected' | 'unreachable' | 'kept';

/** The delivery of an entry whose post's outcome was never recorded (see the header). */
export const INTERRUPTED = 'interrupted';

/** The entries found without a delivery when the ledger was opened for writing, now `interrupted`. */
export interface InterruptedEntries {
  count: number;
  /** The lowest and highest such seq; null when there were none. */
  firstSeq: number | null;
  lastSeq: number | null;
}

export interface Ledger {
  /** What opening for writing marked `interrupted` (none for a read-only ledger). */
  readonly interrupted: InterruptedEntries;
  /** Appends a body; the chain's new head. */
  append(body: string, createdAt: number): LedgerEntry;
  /** Records how the post of an entry went (not part of the chain); replaces an `interrupted` mark. */
  setDelivery(seq: number, delivery: Delivery): void;
  /** Entries in seq order: every row (even one with a seq the chain cannot hold), or those from a seq on. */
  entries(fromSeq?: number): IterableIterator<LedgerEntry>;
  /** Where the chain starts (the genesis, or the last pruned entry). */
  start(): ChainStart;
  head(): ChainStart;
  count(): number;
  /**
   * Where a check from `fromSeq` on is anchored: the chain's start, the stored entry just before
   * `fromSeq` (undefined when that entry is missing), or the head when `fromSeq` is past it.
   */
  anchorOf(fromSeq: number): ChainStart | undefined;
  /**
   * Checks the whole chain, or the entries from `fromSeq` on against their anchor (see anchorOf). Anchor
   * and entries are read in one snapshot: a prune committed by another process between the two reads
   * would otherwise leave entries that do not follow the anchor read, a chain reported broken.
   */
  verify(fromSeq?: number): ChainVerdict;
  /**
   * Runs `read` in one read transaction: every read in it sees the same state of the file, whatever
   * another process commits meanwhile.
   *
   * @example
   * const { start, verdict } = ledger.snapshot(() => ({ start: ledger.start(), verdict: ledger.verify() }));
   */
  snapshot<T>(read: () => T): T;
  /**
   * Removes entries created before `before` (epoch ms), keeping the chain verifiable; how many went.
   * The newest `keepNewest` entries stay whatever their time says (see the daemon's pruneLedger).
   */
  prune(before: number, keepNewest?: number): number;
  close(): void;
}

interface Row {
  seq: number;
  created_at: number;
  prev_hash: string;
  hash: string;
  body: string;
  delivery: string | null;
}

const toEntry = (r: Row): LedgerEntry => ({ seq: r.seq, createdAt: r.created_at, prevHash: r.prev_hash, hash: r.hash, body: r.body, delivery: r.delivery });

const NONE_INTERRUPTED: InterruptedEntries = Object.freeze({ count: 0, firstSeq: null, lastSeq: null });

/** The statements of one open ledger file, but those of entries(), which several iterations may run at once. */
interface LedgerStatements {
  unmarked: SqliteStatement;
  markInterrupted: SqliteStatement;
  last: SqliteStatement;
  checkpoint: SqliteStatement;
  insert: SqliteStatement;
  setDelivery: SqliteStatement;
  count: SqliteStatement;
  entryAt: SqliteStatement;
  lastPrunable: SqliteStatement;
  removeThrough: SqliteStatement;
  setCheckpoint: SqliteStatement;
}

/**
 * Prepares every statement at open (see prepareStatements), so that a ledger lacking a table or column
 * fails the start as a damaged file, never a tick, a prune or an audit halfway. Between them they name
 * every table and column the ledger uses, also those entries() reads.
 */
function ledgerStatements(db: SqliteDatabase): LedgerStatements {
  return {
    unmarked: db.prepare('SELECT COUNT(*) AS count, MIN(seq) AS firstSeq, MAX(seq) AS lastSeq FROM ledger_entries WHERE delivery IS NULL'),
    markInterrupted: db.prepare('UPDATE ledger_entries SET delivery = ? WHERE delivery IS NULL'),
    last: db.prepare('SELECT seq, hash FROM ledger_entries ORDER BY seq DESC LIMIT 1'),
    checkpoint: db.prepare('SELECT seq, hash FROM ledger_checkpoint WHERE id = 1'),
    insert: db.prepare('INSERT INTO ledger_entries (seq, created_at, prev_hash, hash, body) VALUES (?, ?, ?, ?, ?)'),
    setDelivery: db.prepare('UPDATE ledger_entries SET delivery = ? WHERE seq = ?'),
    count: db.prepare('SELECT COUNT(*) AS n FROM ledger_entries'),
    entryAt: db.prepare('SELECT seq, hash FROM ledger_entries WHERE seq = ?'),
    lastPrunable: db.prepare('SELECT seq, hash FROM ledger_entries WHERE created_at < ? AND seq <= ? ORDER BY seq DESC LIMIT 1'),
    removeThrough: db.prepare('DELETE FROM ledger_entries WHERE seq <= ?'),
    setCheckpoint: db.prepare(
      'INSERT INTO ledger_checkpoint (id, seq, hash, pruned_at) VALUES (1, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, pruned_at = excluded.pruned_at',
    ),
  };
}

/**
 * Marks every entry without a delivery `interrupted`: run when a writer opens the file, before it appends
 * anything, so those entries were left by a process that stopped between the append and the record of its
 * post's outcome. They are marked, not posted again: each batch is the counts of one tick (its batchId is
 * the building and the tick's time), and the next tick supersedes it, so a lost one costs one poll
 * interval as any dropped post does, while a late copy, maybe hours after a power cut, would only bring
 * stale counts. Whether it arrived cannot be known here; if it did, nothing is owed (the ingest keeps a
 * batchId once).
 * A writer opening the file while another process still has a post in flight (doctor's probe while the
 * collector runs, or the reverse) marks that entry too; that process then records the real outcome over
 * the mark.
 */
function markInterrupted(db: SqliteDatabase, path: string, statements: LedgerStatements): InterruptedEntries {
  const mark = db.transaction((): InterruptedEntries => {
    const found = statements.unmarked.get() as InterruptedEntries;
    if (found.count === 0) return NONE_INTERRUPTED;
    statements.markInterrupted.run(INTERRUPTED);
    return found;
  });
  try {
    return mark.immediate();
  } catch (err) {
    db.close();
    throw new StorageError(`cannot mark the interrupted entries of ${path}: ${explainStorageFailure(path, err)}`, sqliteCodeOf(err));
  }
}

/**
 * Opens the ledger file. `readonly` is for the `ledger` commands: nothing is created or migrated.
 *
 * @example
 * const ledger = openLedger('/var/lib/lintel-edge/ledger.sqlite');
 * const entry = ledger.append(body, Date.now());
 */
export function openLedger(path: string, options: { readonly?: boolean } = {}): Ledger {
  // Durable: an entry is appended before its batch is posted, so a power cut must never leave a batch
  // at the ingest that the ledger lost (its sequence number would then be reused for another body). The
  // zone file is durable too, for the pairs still owed a 0 (see openZoneDatabase in zones/store.ts).
  const db: SqliteDatabase = openDatabase(path, ledgerMigrations(), { readonly: options.readonly ?? false, durable: true });
  let statements: LedgerStatements;
  try {
    // Never set aside when damaged, unlike the zone file: the start fails (exit 2) and the file stays.
    statements = prepareStatements(path, () => ledgerStatements(db));
  } catch (err) {
    db.close();
    throw err;
  }
  const interrupted = options.readonly ? NONE_INTERRUPTED : markInterrupted(db, path, statements);
  const { last, checkpoint, insert } = statements;

  const start = (): ChainStart => (checkpoint.get() as ChainStart | undefined) ?? GENESIS;
  const head = (): ChainStart => (last.get() as ChainStart | undefined) ?? start();

  const append = db.transaction((body: string, createdAt: number): LedgerEntry => {
    const previous = head();
    const entry: LedgerEntry = { seq: previous.seq + 1, createdAt, prevHash: previous.hash, hash: chainHash(previous.hash, body), body, delivery: null };
    insert.run(entry.seq, entry.createdAt, entry.prevHash, entry.hash, entry.body);
    return entry;
  });

  const prune = db.transaction((before: number, keepNewest: number): number => {
    const newestPrunable = head().seq - keepNewest;
    const lastOld = statements.lastPrunable.get(before, newestPrunable) as ChainStart | undefined;
    if (!lastOld) return 0;
    const removed = statements.removeThrough.run(lastOld.seq).changes;
    statements.setCheckpoint.run(lastOld.seq, lastOld.hash, Date.now());
    return removed;
  });

  function* entries(fromSeq?: number): IterableIterator<LedgerEntry> {
    // Without a bound, every row: one with a negative seq must reach verify and audit, not hide below 0.
    const rows = fromSeq === undefined ? db.prepare('SELECT * FROM ledger_entries ORDER BY seq').iterate() : db.prepare('SELECT * FROM ledger_entries WHERE seq >= ? ORDER BY seq').iterate(fromSeq);
    for (const row of rows as IterableIterator<Row>) yield toEntry(row);
  }

  const anchorOf = (fromSeq: number): ChainStart | undefined => {
    const chainStart = start();
    if (fromSeq <= chainStart.seq + 1) return chainStart;
    const last = head();
    if (fromSeq > last.seq) return last;
    return statements.entryAt.get(fromSeq - 1) as ChainStart | undefined;
  };

  // A deferred transaction: its snapshot is taken at its first read and held to its end (WAL), so a
  // read-only connection can take one too. Nested in another, it is a savepoint of that one's snapshot.
  const snapshot = <T>(read: () => T): T => db.transaction(read)();

  const verify = (fromSeq?: number): ChainVerdict =>
    snapshot(() => {
      // verifyChain consumes the entries before the transaction ends.
      if (fromSeq === undefined) return verifyChain(entries(), start());
      const anchor = anchorOf(fromSeq);
      if (!anchor) return { ok: false, entries: 0, problems: [{ seq: fromSeq - 1, problem: `missing, so the chain cannot be checked from seq ${fromSeq} (deleted?)` }] };
      return verifyChain(entries(fromSeq), anchor);
    });

  return {
    interrupted,
    append(body, createdAt) {
      if (options.readonly) throw new Error('the ledger was opened read-only');
      // IMMEDIATE: another process appending (doctor's probe) waits instead of forking the chain.
      return append.immediate(body, createdAt);
    },
    setDelivery(seq, delivery) {
      if (options.readonly) throw new Error('the ledger was opened read-only');
      statements.setDelivery.run(delivery, seq);
    },
    entries,
    start,
    head,
    count: () => (statements.count.get() as { n: number }).n,
    anchorOf,
    verify,
    snapshot,
    prune(before, keepNewest = 0) {
      if (options.readonly) throw new Error('the ledger was opened read-only');
      // IMMEDIATE: a deferred transaction that read the head would fail at once (SQLITE_BUSY, no wait)
      // when another process appended before its delete; this one waits for the write lock first.
      return prune.immediate(before, Math.max(0, Math.floor(keepNewest)));
    },
    close() {
      if (db.open) db.close();
    },
  };
}
