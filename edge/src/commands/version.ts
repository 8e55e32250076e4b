/**
 * `lintel-edge version`: the version, the runtime, and SQLite as actually loaded (in the executable,
 * from the addon it carries), so the command also proves the bundle can open its databases.
 */
import Database from 'better-sqlite3';
import { nativeBindingForSea } from '../storage/native-addon.js';
import { VERSION } from '../version.js';

export function describeVersion(): string {
  const nativeBinding = nativeBindingForSea();
  const db = new Database(':memory:', (nativeBinding ? { nativeBinding } : {}) as Database.Options);
  try {
    const sqlite = (db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v;
    return `lintel-edge ${VERSION} (node ${process.version}, ${process.platform}-${process.arch}, sqlite ${sqlite})`;
  } finally {
    db.close();
  }
}
