/**
 * How the shipped collector is started: the environment that the systemd unit
 * (edge/systemd/lintel-edge.service) sets (NODE_OPTIONS bounding the V8 heap, MALLOC_ARENA_MAX), so the
 * benchmark's headline figures are those of the configuration that ships, not of V8's defaults.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const UNIT_FILE = fileURLToPath(new URL('../../../edge/systemd/lintel-edge.service', import.meta.url));

/** The unit's `Environment=` assignments (each may be double-quoted as a whole, as systemd allows). */
export function shippedEnvironment(unitFile = UNIT_FILE): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of readFileSync(unitFile, 'utf8').split('\n')) {
    const directive = /^Environment=(.*)$/.exec(line.trim());
    if (!directive) continue;
    for (const assignment of directive[1]?.match(/"[^"]*"|\S+/g) ?? []) {
      const unquoted = assignment.startsWith('"') ? assignment.slice(1, -1) : assignment;
      const eq = unquoted.indexOf('=');
      if (eq > 0) env[unquoted.slice(0, eq)] = unquoted.slice(eq + 1);
    }
  }
  if (env.NODE_OPTIONS === undefined) throw new Error(`${unitFile} sets no NODE_OPTIONS`);
  return env;
}

/**
 * The environment of a process the benchmark starts: this one's, with the shipped settings, or with none
 * of them (undefined: V8's and glibc's defaults, for comparison).
 */
export function runnerEnv(shipped: Record<string, string> | undefined): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  delete env.MALLOC_ARENA_MAX;
  return shipped === undefined ? env : { ...env, ...shipped };
}
