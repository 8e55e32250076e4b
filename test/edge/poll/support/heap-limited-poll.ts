/**
 * One tick of the poller in a process of its own, started by heap-limited-poll.test.ts with the heap the
 * collector's systemd unit gives. Reads `{ aps, timeoutMs, dialectFiles }` from the JSON file named by its
 * argument, polls every AP at once, and prints one JSON document: the heap limit it ran under and each
 * result (stations counted, not listed). A process killed by an exhausted heap prints nothing.
 */
import { readFileSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';
import { dialectsFromFiles, loadDialects } from '../../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../../edge/src/poll/poller.js';
import type { AccessPoint } from '../../../../edge/src/poll/types.js';

interface Input {
  aps: AccessPoint[];
  timeoutMs: number;
  dialectFiles?: Record<string, string>;
}

const input = JSON.parse(readFileSync(process.argv[2] ?? '', 'utf8')) as Input;
const poller = createPoller({ dialects: new Map([...loadDialects(), ...dialectsFromFiles(input.dialectFiles ?? {})]) });
const results = await poller.pollAll(input.aps, input.timeoutMs);
await poller.close();
process.stdout.write(
  JSON.stringify({
    heapLimitBytes: getHeapStatistics().heap_size_limit,
    results: results.map((r) => (r.ok ? { ap: r.ap, ok: true, stations: r.stations.length } : { ap: r.ap, ok: false, reason: r.reason, error: r.error })),
  }),
);
