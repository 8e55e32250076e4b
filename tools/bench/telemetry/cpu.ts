/**
 * CPU seconds (user + system) spent by processes, read from /proc (Linux). The benchmark uses it to
 * say where the time goes: the service, the PostgreSQL backends of its database, Redis.
 */
import { readFileSync, readdirSync } from 'node:fs';

/** CPU seconds (user + system) of one process so far; NaN when there is no such process. */
export function cpuSecondsOfProcess(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const { user, system } = cpuTimesOfPid(pid);
    return user + system;
  } catch {
    return Number.NaN;
  }
}

/** CPU seconds the whole machine has spent busy, over every core (neither idle nor waiting on I/O). */
export function machineBusySeconds(): number {
  try {
    const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0);
    return (ticks.reduce((a, b) => a + b, 0) - idle) / 100;
  } catch {
    return Number.NaN;
  }
}

/** User and system CPU seconds of one process (utime and stime of stat(5)). */
export function cpuTimesOfPid(pid: string | number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start at index 2 of stat(5).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 };
}

/**
 * Seconds the main thread of a process has run on a CPU, and seconds it has waited on a run queue,
 * ready to run but with no CPU free (schedstat of sched(7)); NaN for both without it.
 */
export function runQueueOfPid(pid: string | number): { onCpu: number; waiting: number } {
  try {
    const [onCpu, waiting] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').trim().split(/\s+/).map(Number);
    return { onCpu: (onCpu ?? Number.NaN) / 1e9, waiting: (waiting ?? Number.NaN) / 1e9 };
  } catch {
    return { onCpu: Number.NaN, waiting: Number.NaN };
  }
}

/** The pids of every process whose command line satisfies `match`, at this moment; none without /proc. */
export function pidsMatching(match: (commandLine: string, pid: number) => boolean): number[] {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return [];
  }
  return pids.map(Number).filter((pid) => {
    try {
      return match(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' '), pid);
    } catch {
      return false; // the process ended between listing and reading
    }
  });
}

/** Summed CPU seconds of these processes so far; one that has ended counts for nothing. */
export function cpuSecondsOfPids(pids: readonly number[]): number {
  let total = 0;
  for (const pid of pids) {
    const seconds = cpuSecondsOfProcess(pid);
    if (!Number.isNaN(seconds)) total += seconds;
  }
  return total;
}

/** Summed CPU seconds of every process whose command line satisfies `match`; 0 without /proc. */
export function cpuSeconds(match: (commandLine: string, pid: number) => boolean): number {
  return cpuSecondsOfPids(pidsMatching(match));
}
