/**
 * Diagnostic, not the benchmark: the service's breach path alone, fed the benchmark's 50,000 alerts
 * from memory, with no Kafka at all. Each record goes to one of 4 partitions by its key, as a keyed
 * producer places it; each partition is cut into batches of `BREACH_ONLY_BATCH` records (default
 * 4,000, about what kafkajs hands over per partition in the benchmark's first fetch), settled in order,
 * the 4 partitions at once. Everything else is as in `bench:notification`: Redis cooldown and seen
 * marks, the directory in its own process with a cold cache each round, the in-app publish, the
 * recipient query on FerretDB. Five rounds, each with fresh cooldown keys; a round that does not deliver
 * 5,000 alerts and suppress 45,000 ends the run with an error.
 *
 * What it bounds: a round here costs the service everything but Kafka, so no change on the Kafka side
 * (a decoding path of its own, a consumer on another thread) can settle faster than this does.
 * `npx tsx tools/bench/notification/breach-only.ts` with the stack up.
 */
import { randomBytes } from 'node:crypto';
import type { AlertRecord } from '../../../cloud/notification/breach.js';
import { printLine } from '../report.js';
import { cpuMark, findParties, PARTIES, PARTY_LABELS } from './cpu-marks.js';
import { alerts, checkedOutcomes, fastest, openServers, roundOf, runToExit, serviceBreach, type Round, type RoundOutcomes } from './workload.js';

const PARTITIONS = 4;
const ROUNDS = 5;
const BATCH = Number(process.env.BREACH_ONLY_BATCH ?? 4000);

const run = randomBytes(4).toString('hex');

/** FNV-1a of the record key: the same key always lands in the same partition. */
function partitionOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % PARTITIONS;
}

async function main(): Promise<void> {
  if (!Number.isInteger(BATCH) || BATCH < 1) throw new Error(`BREACH_ONLY_BATCH must be a positive integer, not ${process.env.BREACH_ONLY_BATCH}`);
  const partitions: Buffer[][] = Array.from({ length: PARTITIONS }, () => []);
  for (const { key, value } of alerts(run)) partitions[partitionOf(key)]!.push(Buffer.from(value));
  const servers = await openServers(run, `bench_breach_only_${run}`);
  try {
    const parties = { ...findParties(servers.directoryPid), broker: [] };
    const rounds: Array<Round & RoundOutcomes> = [];
    for (let round = 0; round < ROUNDS; round++) {
      const { breach, outcome, close } = await serviceBreach({ ...servers, run, round });
      try {
        const first = cpuMark(parties);
        await Promise.all(
          partitions.map(async (records, partition) => {
            for (let start = 0; start < records.length; start += BATCH) {
              const batch: AlertRecord[] = records.slice(start, start + BATCH).map((value, i) => ({ value, offset: String(start + i) }));
              const { settled, error } = await breach.settle(batch, { topic: 'memory', partition });
              if (settled !== batch.length) throw new Error(`partition ${partition}: a record could not be settled: ${String(error)}`);
            }
          }),
        );
        const last = cpuMark(parties);
        rounds.push({ ...roundOf(first, last), ...(await checkedOutcomes(`breach path alone round ${round + 1}`, outcome)) });
      } finally {
        await close();
      }
    }
    rounds.forEach((r, i) => printLine(`breach path alone round ${i + 1}`, r.rate.toFixed(0), 'alerts/s'));
    const best = fastest(rounds);
    printLine('batch per partition', String(BATCH), 'records');
    printLine('delivered per round', String(best.delivered), 'alerts');
    printLine('suppressed per round', String(best.suppressed), 'alerts');
    for (const party of PARTIES) if (party !== 'broker') printLine(`best round: ${PARTY_LABELS[party].replace('consumer', 'service')}`, best.cpu[party].toFixed(0), '%');
    printLine('breach path alone (best)', best.rate.toFixed(0), 'alerts/s');
  } finally {
    await servers.close();
  }
}

runToExit('breach-only', main);
