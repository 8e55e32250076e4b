/**
 * Which key ring verifies an ingest request: the per-gateway key named by `X-Key-Id` (from the
 * `ingest_keys` table), or the shared ring from INGEST_SIGNING_SECRET when no key id is sent.
 */
import { TtlCache, systemClock, type Clock } from '../../shared/ttl-cache.js';
import type { IngestKeyStore } from './store/ingest-keys.js';
import { KEY_ID } from './store/ingest-keys.js';

/** The key ring for a request, and the scope its batch ids are unique in ('' for the shared ring). */
export interface ChosenKey {
  keyId: string;
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
  /** How long a looked-up key (or its absence) is trusted; a revocation takes effect within it. */
  cacheTtlMs?: number;
  clock?: Clock;
}

export function createSigningKeys(options: SigningKeysOptions): SigningKeys {
  const cache = new TtlCache<string | null>(options.cacheTtlMs ?? 30_000, options.clock ?? systemClock);
  return {
    async choose(keyIdHeader) {
      if (keyIdHeader === undefined) return options.shared.length > 0 ? { keyId: '', ring: options.shared } : undefined;
      if (!KEY_ID.test(keyIdHeader)) return undefined;
      let secret = cache.get(keyIdHeader);
      if (secret === undefined) {
        secret = (await options.store.secretOf(keyIdHeader)) ?? null;
        cache.set(keyIdHeader, secret);
      }
      return secret === null ? undefined : { keyId: keyIdHeader, ring: [secret] };
    },
  };
}
