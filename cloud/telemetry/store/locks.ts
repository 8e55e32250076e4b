/**
 * Advisory lock keys (database-scoped). Ingest holds ROLLUP_LOCK shared for its transaction; the
 * retention job holds it exclusive while it rolls up and drops, so the two never interleave.
 */
export const ROLLUP_LOCK = 0x7e1e_0002;
/** Serialises creating day partitions between replicas. */
export const PARTITION_LOCK = 0x7e1e_0003;
/**
 * Held by the replica relaying the alert outbox. One relays at a time: two sending disjoint slices of
 * the outbox at once would put a room's later alerts on its partition before its earlier ones.
 */
export const RELAY_LOCK = 0x7e1e_0004;
/**
 * Held by an ingest transaction from its outbox insert to its COMMIT, so outbox rows commit in the
 * order of their `seq`. Without it two batches could take seq 10 and 11 and commit 11 first; the
 * relay, sending in seq order, would send 11, then 10 once it committed, after it.
 */
export const OUTBOX_LOCK = 0x7e1e_0005;

/**
 * Items in the order their rows are locked in: by key, in JavaScript's string order (UTF-16 code
 * units). Every writer of the same rows (threshold edits, registrations) takes them in this one order,
 * whatever order its input named them in: two writers taking them in opposite orders would each hold
 * a row the other waits for, and PostgreSQL would abort one as a deadlock, losing its change.
 */
export function inLockOrder<T>(items: readonly T[], key: (item: T) => string): T[] {
  return [...items].sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
}
