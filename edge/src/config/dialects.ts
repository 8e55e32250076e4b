/** The dialects a config may name: those shipped in firmware-bindings/access-points. */
import { apIdentityFormat, loadDialects, type DialectCatalog } from '../poll/dialects.js';
import type { DialectInfo } from './load.js';

/** What the config checks need of each dialect in a catalog. */
export function dialectInfoOf(catalog: DialectCatalog): Map<string, DialectInfo> {
  const out = new Map<string, DialectInfo>();
  for (const [name, dialect] of catalog) {
    const snmp = dialect.transport === 'snmp';
    out.set(name, {
      transport: dialect.transport,
      controller: snmp && dialect.controller,
      namesApOfStation: snmp && dialect.tables.some((table) => table.apIdentity !== undefined),
      apIdentity: snmp ? apIdentityFormat(dialect) : undefined,
    });
  }
  return out;
}

/** The shipped dialects (throws DialectError listing every broken dialect file). */
export function shippedDialects(): Map<string, DialectInfo> {
  return dialectInfoOf(loadDialects());
}
