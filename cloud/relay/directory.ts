/**
 * The relay's building directory: GET /domain/{buildingId} with the caller's claims, a 2 s timeout, and
 * every answer, an empty list included, cached for 60 s per building (seed 000, rule 3 of the socket
 * events). A failed lookup is never cached.
 */
import { createBuildingDirectory, type BuildingDirectory } from '../../shared/directory.js';
import type { Clock } from '../../shared/ttl-cache.js';

/** Building-domain answers are kept this long per building. */
export const DIRECTORY_CACHE_TTL_MS = 60_000;
/** A directory lookup that takes longer is a lookup_failed. */
export const DIRECTORY_TIMEOUT_MS = 2000;

/**
 * @example
 * const directory = relayDirectory('http://twin:3000');
 * await directory.domainsOf('b1', claimsHeader); // ['acme']
 */
export function relayDirectory(baseUrl: string, options: { timeoutMs?: number; clock?: Clock } = {}): BuildingDirectory {
  const { timeoutMs = DIRECTORY_TIMEOUT_MS, clock } = options;
  return createBuildingDirectory({ baseUrl, timeoutMs, cacheTtlMs: DIRECTORY_CACHE_TTL_MS, cacheEmpty: true, ...(clock ? { clock } : {}) });
}
