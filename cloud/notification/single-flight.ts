/**
 * Concurrent lookups of the same building share one directory request. Many alerts of one building
 * arrive together (one batch, several partitions); without this each would miss the cache at once.
 */
import type { BuildingDirectory } from '../../shared/directory.js';

/**
 * Wraps a directory so that identical lookups in flight at the same time make one request.
 *
 * @example
 * const directory = coalesceLookups(createBuildingDirectory({ baseUrl, cacheTtlMs: 900_000 }));
 */
export function coalesceLookups(directory: BuildingDirectory): BuildingDirectory {
  const inFlight = new Map<string, Promise<string[]>>();
  return {
    domainsOf(buildingId, claimsHeader) {
      const key = `${buildingId}\u0000${claimsHeader}`;
      const pending = inFlight.get(key);
      if (pending) return pending.then((domains) => [...domains]);
      const lookup = directory.domainsOf(buildingId, claimsHeader).finally(() => inFlight.delete(key));
      inFlight.set(key, lookup);
      return lookup.then((domains) => [...domains]);
    },
  };
}
