/** The shipped systemd unit, read as systemd reads its directives (what the build tests check). */
import { readFileSync } from 'node:fs';

export const UNIT_PATH = new URL('../../../edge/systemd/lintel-edge.service', import.meta.url);

/** Every `Key=value` directive, in order, by key. */
export function unitDirectives(text = readFileSync(UNIT_PATH, 'utf8')): Map<string, string[]> {
  const directives = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line.trim());
    if (m) directives.set(m[1]!, [...(directives.get(m[1]!) ?? []), m[2]!]);
  }
  return directives;
}

/** The unit's Environment= assignments (each may be double-quoted as a whole, as systemd allows). */
export function unitEnvironment(directives = unitDirectives()): Record<string, string> {
  const env: Record<string, string> = {};
  for (const raw of directives.get('Environment') ?? []) {
    for (const assignment of raw.match(/"[^"]*"|\S+/g) ?? []) {
      const unquoted = assignment.startsWith('"') ? assignment.slice(1, -1) : assignment;
      const eq = unquoted.indexOf('=');
      if (eq > 0) env[unquoted.slice(0, eq)] = unquoted.slice(eq + 1);
    }
  }
  return env;
}

/** The V8 heap limit a NODE_OPTIONS value gives: old space plus three semi-spaces, MB. */
export function heapLimitMbOf(nodeOptions: string): { oldSpaceMb: number; semiSpaceMb: number; heapLimitMb: number } {
  const flag = (name: string) => {
    const m = new RegExp(`(?:^|\\s)--${name}=(\\d+)(?:\\s|$)`).exec(nodeOptions);
    return m ? Number(m[1]) : Number.NaN;
  };
  const oldSpaceMb = flag('max-old-space-size');
  const semiSpaceMb = flag('max-semi-space-size');
  return { oldSpaceMb, semiSpaceMb, heapLimitMb: oldSpaceMb + 3 * semiSpaceMb };
}
