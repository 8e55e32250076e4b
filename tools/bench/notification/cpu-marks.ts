/**
 * Who used the CPU while a round was timed: a mark at its first record and one at the commit that
 * ends it, each read from /proc (Linux). The processes are found once, before the rounds, so that a
 * mark inside the timed window costs a handful of file reads. /proc counts in ticks of 10 ms, so a
 * share over a round of 100 ms is good to about 10 points.
 */
import { cpuSecondsOfPids, machineBusySeconds, pidsMatching, runQueueOfPid } from '../telemetry/cpu.js';

/** The processes besides the consumer's own that a round keeps busy. */
export interface CpuParties {
  broker: number[];
  redis: number[];
  directory: number[];
}

/** The stack's Kafka broker and Redis, and the benchmark's directory process. */
export function findParties(directoryPid: number | undefined): CpuParties {
  return {
    broker: pidsMatching((command) => command.includes(' kafka.Kafka ')),
    redis: pidsMatching((command) => command.startsWith('redis-server')),
    directory: directoryPid === undefined ? [] : [directoryPid],
  };
}

/** Every party a mark reads, in the order the benchmark prints them. */
export const PARTIES = ['machine', 'consumer', 'consumerThread', 'consumerThreadWaiting', 'broker', 'redis', 'directory'] as const;
type Party = (typeof PARTIES)[number];

/** Each party's CPU over a round, in percent of one core (the machine's over all its cores). */
export type CpuShares = Record<Party, number>;

/**
 * CPU seconds so far of each party. `consumer` is this process, where the consumer under test runs;
 * `consumerThread` is its main thread (the event loop) on a CPU, and `consumerThreadWaiting` that
 * thread ready to run with no CPU free (its schedstat, counted in nanoseconds).
 */
export type CpuMark = { at: number } & Record<Party, number>;

/** The moment (`performance.now()`, taken first) and each party's CPU seconds so far. */
export function cpuMark(parties: CpuParties): CpuMark {
  const at = performance.now();
  const { user, system } = process.cpuUsage();
  const thread = runQueueOfPid(process.pid);
  return {
    at,
    machine: machineBusySeconds(),
    consumer: (user + system) / 1e6,
    consumerThread: thread.onCpu,
    consumerThreadWaiting: thread.waiting,
    broker: cpuSecondsOfPids(parties.broker),
    redis: cpuSecondsOfPids(parties.redis),
    directory: cpuSecondsOfPids(parties.directory),
  };
}

/** Each party's CPU between two marks. */
export function cpuShares(from: CpuMark, to: CpuMark): CpuShares {
  const seconds = (to.at - from.at) / 1000;
  return Object.fromEntries(PARTIES.map((party) => [party, ((to[party] - from[party]) / seconds) * 100])) as CpuShares;
}

/** The labels the benchmark prints the shares under. */
export const PARTY_LABELS: Record<Party, string> = {
  machine: 'machine cpu',
  consumer: 'consumer process cpu',
  consumerThread: 'consumer event loop on cpu',
  consumerThreadWaiting: 'consumer event loop waiting for cpu',
  broker: 'kafka broker cpu',
  redis: 'redis cpu',
  directory: 'directory process cpu',
};
