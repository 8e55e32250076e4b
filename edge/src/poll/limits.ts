/**
 * How much one AP may hand the poller in one tick, sized to the collector's heap: the systemd unit gives V8
 * 64 MB of old space (about 67 MB in all, see edge/systemd/lintel-edge.service), which the zone tracker,
 * the ledger and every AP polled at once share. An AP answering more than these fails with `bad_output`
 * for that tick: its devices are frozen, the other APs are unaffected, and the process stays up.
 */

/**
 * Bound on one SSH command's stdout plus stderr. What busy APs print is far less: `iw station dump` is
 * about 0.7 to 1 KiB a station (500 stations: some 500 KiB), `ubus get_clients` about 0.3 KiB a client,
 * and UniFi's `mca-dump` about 1 to 1.5 KiB a station plus some 20 KiB of radio and port tables. Kept as a
 * string, the output costs its own size in heap; what parsing it costs is bounded below.
 */
export const MAX_SSH_OUTPUT_BYTES = 1024 * 1024;

/**
 * Bound on one line of a line-oriented SSH output (`iw station dump`), checked before any pattern reads
 * it. `iw` prints lines of some 100 characters; a longer one is no station dump, and refusing it keeps
 * what a line costs to match small whatever the AP sends.
 */
export const MAX_OUTPUT_LINE_CHARS = 4096;

/**
 * Bound on the stations one AP lists in a tick: over all its interfaces, readable or not, for an SSH AP;
 * the distinct stations of its tables for an SNMP AP, and of each AP behind a controller on its own. APs
 * carry a few hundred clients at most; the zone tracker keeps about 0.7 KiB of heap for each device it is
 * told of, so an AP listing tens of thousands of made-up stations would fill the heap over a few ticks.
 */
export const MAX_STATIONS_PER_AP = 4096;

/**
 * Bound on the objects and arrays in a JSON output, counted before it is parsed. JSON.parse builds the
 * whole document, and an empty object (3 bytes of output) costs some 60 bytes of heap: 1 MiB of `{},`
 * would take over 20 MB. A real document has a few per station (8 allowed for each of
 * {@link MAX_STATIONS_PER_AP}); this many cost about 2 MB at most.
 */
export const MAX_JSON_CONTAINERS = 8 * MAX_STATIONS_PER_AP;

/**
 * What one walked SNMP value costs in heap until the poll is decoded: measured about 200 bytes walked and
 * indexed by row, 255 once decoded into a sighting (a Cisco WLC station table, three columns), OID
 * included. A long OID or string costs its length on top: a value counts once more for each this many
 * bytes its OID and a string value hold together (snmp/session.ts).
 */
export const SNMP_CELL_BYTES = 256;

/**
 * Bound on the sub-ids of a row index, past the column walked. The longest index of a table the dialects
 * read is Cisco's station table, 14 (station MAC, AP MAC, slot, antenna); the others are a MAC, with an
 * interface number on MikroTik. An agent may answer an OID of any length (tens of thousands of sub-ids
 * fit in a datagram), and the walk holds each until the poll is decoded, so a longer one fails the walk
 * (`bad_output`) at once: it is no row the dialect can read, and a few hundred such answers would fill
 * the heap.
 */
export const MAX_SNMP_INDEX_IDS = 32;

/** The share of the heap the SNMP answers of one poll (every AP's station and status tables) may fill. */
const SNMP_HEAP_SHARE = 0.4;

/**
 * How many SNMP values the walks of one poll may return together, over all APs, columns and tables: 40% of
 * the heap limit at {@link SNMP_CELL_BYTES} each. Under the unit's 64 MB, about 110,000 values, the three
 * columns of a controller station table of some 35,000 rows; a larger controller needs a larger heap
 * (--max-old-space-size), which raises this bound with it. Past it, the AP still being walked that
 * returned the most fails with `bad_output` (snmp/session.ts, CellBudget).
 *
 * @example
 * snmpCellBudget(getHeapStatistics().heap_size_limit); // 109772 under --max-old-space-size=64 --max-semi-space-size=1
 */
export function snmpCellBudget(heapLimitBytes: number): number {
  return Math.floor((heapLimitBytes * SNMP_HEAP_SHARE) / SNMP_CELL_BYTES);
}
