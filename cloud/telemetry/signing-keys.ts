/**
 * Which key ring verifies an ingest request, and which buildings the batch may write: the per-gateway
 * key named by `X-Key-Id` (from the `ingest_keys` table, with its buildings), or the shared ring from
 * INGEST_SIGNING_SECRET when no key id is sent (any building, the contract's fallback).
 */
import { KEY_ID } from '../../shared/hmac.js';
import { TtlCache, type Clock } from '../../shared/ttl-cache.js';
import type { IngestKeyScope } from './domain/building-scope.js';
import type { IngestKeyStore } from './store/ingest-keys.js';

/** The key ring for a request, the scope its batch ids are unique in ('' for the shared ring), and its buildings. */
export interface ChosenKey extends IngestKeyScope {
  ring: readonly string[];
}

export interface SigningKeys {
  /** undefined: no such key, so the signature cannot be right. */
  choose(keyIdHeader: string | undefined): Promise<ChosenKey | undefined>;
}

export interface SigningKeysOptions {
  /** The shared ring, current secret first. */
  shared: readonly string[];
  store: IngestKeyStore;
  /** How long a looked-up key (or its absence) is trusted; a revocation or rebinding takes effect within it. */
  cacheTtlMs?: number;
  /** What the cache's lifetime is measured on; by default the monotonic clock, which no NTP step moves. */
  clock?: Clock;
}

export function createSigningKeys(options: SigningKeysOptions): SigningKeys {
  const cache = new TtlCache<ChosenKey | null>(options.cacheTtlMs ?? 30_000, options.clock);
  const shared: ChosenKey | undefined = options.shared.length > 0 ? { keyId: '', ring: options.shared, buildings: 'any' } : undefined;
  return {
    async choose(keyIdHeader) {
      if (keyIdHeader === undefined) return shared;
      if (!KEY_ID.test(keyIdHeader)) return undefined;
      let key = cache.get(keyIdHeader);
      if (key === undefined) {
        const found = await options.store.activeKey(keyIdHeader);
        key = found ? { keyId: keyIdHeader, ring: [found.secret], buildings: found.buildingIds === null ? 'any' : new Set(found.buildingIds) } : null;
        cache.set(keyIdHeader, key);
      }
      return key ?? undefined;
    },
  };
}
