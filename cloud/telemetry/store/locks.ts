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
 * Class of the per-building threshold locks, `pg_advisory_xact_lock(THRESHOLD_LOCKS, hashtext(building))`.
 * Every writer of a building's threshold rows takes its building's lock as its first lock: a room
 * PATCH and a building PUT before their upserts, a registration carrying thresholds before its
 * building, rooms and sensors. So those writers run one after the other per building. Row order alone
 * could not keep them apart: a registration inserts the rows its new rooms lack, then merges into
 * every room's row, and a PATCH between the two could hold a row the merge needs while waiting for one
 * the registration had just inserted; PostgreSQL aborted one as a deadlock and its change was lost.
 *
 * Lock order, for a writer holding it: this lock, then (a registration only) the building's row, its
 * rooms and sensors, then threshold rows. Each transaction names one building, so two buildings whose
 * ids hash alike only wait for each other, never in a cycle. Nothing else locks threshold rows: ingest
 * reads them without a row lock, and retention does not touch them.
 */
export const THRESHOLD_LOCKS = 0x7e1e_0006;

/** Takes `buildingId`'s threshold lock (THRESHOLD_LOCKS) until the end of `client`'s transaction. */
export async function lockBuildingThresholds(client: { query(sql: string, values: unknown[]): Promise<unknown> }, buildingId: string): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [THRESHOLD_LOCKS, buildingId]);
}

/**
 * Items in the order their rows are locked in: by key, in JavaScript's string order (UTF-16 code
 * units). A threshold writer takes its rows in this order, whatever order its input named them in.
 * Writers of one building are kept apart by its threshold lock (THRESHOLD_LOCKS), not by this order;
 * the order keeps each writer's locking the same from one call to the next.
 */
export function inLockOrder<T>(items: readonly T[], key: (item: T) => string): T[] {
  return [...items].sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
}
