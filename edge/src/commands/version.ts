/**
 * `lintel-edge version`: the version, the runtime, and SQLite as actually loaded (in the executable,
 * from the addon it carries), so the command also proves the bundle can open its databases.
 * `version --verbose` adds how the runtime was started: whether this is the single executable, the
 * NODE_OPTIONS it honoured, and the V8 heap limit those give (what the systemd unit's bound becomes).
 */
import Database from 'better-sqlite3';
import { runtimeFacts } from '../runtime.js';
import { nativeBindingForSea } from '../storage/native-addon.js';
import { VERSION } from '../version.js';

export function describeVersion(options: { verbose?: boolean } = {}): string {
  const nativeBinding = nativeBindingForSea();
  const db = new Database(':memory:', (nativeBinding ? { nativeBinding } : {}) as Database.Options);
  let line: string;
  try {
    const sqlite = (db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v;
    line = `lintel-edge ${VERSION} (node ${process.version}, ${process.platform}-${process.arch}, sqlite ${sqlite})`;
  } finally {
    db.close();
  }
  if (!options.verbose) return line;
  const facts = runtimeFacts();
  return [
    line,
    `executable: ${facts.singleExecutable ? 'single executable' : `node script (${process.execPath})`}`,
    `NODE_OPTIONS: ${facts.nodeOptions ?? '(not set)'}`,
    `heap limit: ${facts.heapLimitMb.toFixed(0)} MB`,
    `rss: ${facts.rssMb.toFixed(1)} MB`,
  ].join('\n');
}
