/**
 * Advisory lock keys (database-scoped). Ingest holds ROLLUP_LOCK shared for its transaction; the
 * retention job holds it exclusive while it rolls up and drops, so the two never interleave.
 */
export const ROLLUP_LOCK = 0x7e1e_0002;
/** Serialises creating day partitions between replicas. */
export const PARTITION_LOCK = 0x7e1e_0003;
