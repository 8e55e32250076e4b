/**
 * CPU seconds so far of the stack's FerretDB and of the PostgreSQL backends serving it (its database is
 * `ferretdb`), from /proc: what the store costs the machine, for the chat benchmarks.
 */
import { cpuSeconds } from '../telemetry/cpu.js';

export function ferretdbCpuSeconds(): { ferretdb: number; postgres: number } {
  return {
    ferretdb: cpuSeconds((command) => command.includes('lintel-ferretdb')),
    postgres: cpuSeconds((command) => command.startsWith('postgres: ') && / ferretdb /.test(command)),
  };
}
