/**
 * CPU seconds (user + system) spent by processes, read from /proc (Linux). The benchmark uses it to
 * say where the time goes: the service, the PostgreSQL backends of its database, Redis.
 */
import { readFileSync, readdirSync } from 'node:fs';

function cpuSecondsOfPid(pid: string): number {
  const { user, system } = cpuTimesOfPid(pid);
  return user + system;
}

/** User and system CPU seconds of one process (utime and stime of stat(5)). */
export function cpuTimesOfPid(pid: string | number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start at index 2 of stat(5).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 };
}

/** Summed CPU seconds of every process whose command line satisfies `match`; 0 without /proc. */
export function cpuSeconds(match: (commandLine: string, pid: number) => boolean): number {
  let total = 0;
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return 0;
  }
  for (const pid of pids) {
    try {
      const commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (match(commandLine, Number(pid))) total += cpuSecondsOfPid(pid);
    } catch {
      // the process ended between listing and reading
    }
  }
  return total;
}
