/**
 * Client of the building directory service: `GET {base}/domain/{buildingId}` answers the names of the
 * domains a building belongs to. The answer is not scoped to the caller; callers filter it themselves.
 */
import { request, type Dispatcher } from 'undici';
import { untilAbortedRequest } from './abort.js';
import { CLAIMS_HEADER } from './claims.js';
import { NonEmptyString } from './kinds.js';
import { TtlCache, type Clock } from './ttl-cache.js';

export type DirectoryErrorCode = 'timeout' | 'unreachable' | 'bad_status' | 'bad_body';

/** A failed lookup. `code` says which way it failed; the message never carries the claims. */
export class DirectoryError extends Error {
  readonly code: DirectoryErrorCode;
  readonly status?: number;
  constructor(code: DirectoryErrorCode, message: string, status?: number) {
    super(message);
    this.name = 'DirectoryError';
    this.code = code;
    if (status !== undefined) this.status = status;
  }
}

/** The port services depend on. */
export interface BuildingDirectory {
  /** The building's domain names. Rejects with {@link DirectoryError}. */
  domainsOf(buildingId: string, claimsHeader: string): Promise<string[]>;
}

export interface DirectoryOptions {
  baseUrl: string;
  /** Whole-request timeout. Default 2000 ms. */
  timeoutMs?: number;
  /**
   * How long an answer is kept, per building. 0 disables the cache, and with it the sharing of a lookup
   * in flight among concurrent callers.
   */
  cacheTtlMs: number;
  /**
   * Whether an empty answer is cached too. Default false: a building that has no domain yet is asked
   * again on the next call. Failed answers are never cached.
   */
  cacheEmpty?: boolean;
  /** What the cache's lifetime is measured on; by default the monotonic clock, which no NTP step moves. */
  clock?: Clock;
  dispatcher?: Dispatcher;
}

/** The largest directory answer read: far above any building's list of domains. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * Creates a directory client. Failed answers are never cached, and empty ones only with `cacheEmpty`.
 * With a cache, concurrent calls for one building share a single request: its answer, or its failure
 * (which, not being cached, the next call after it asks again). Without one, every call is a request.
 *
 * @example
 * const directory = createBuildingDirectory({ baseUrl: 'http://twin:3000', cacheTtlMs: 60_000 });
 * await directory.domainsOf('b1', req.get('x-gateway-claims')!); // ['acme']
 */
export function createBuildingDirectory(options: DirectoryOptions): BuildingDirectory {
  const timeoutMs = options.timeoutMs ?? 2000;
  const cache = options.cacheTtlMs > 0 ? new TtlCache<string[]>(options.cacheTtlMs, options.clock) : undefined;
  const base = options.baseUrl.replace(/\/+$/, '');

  /** The timeout covers the whole exchange, so the same failure can come before or during the body. */
  function transportFailure(err: unknown): DirectoryError {
    const name = (err as Error).name;
    if (name === 'TimeoutError' || name === 'AbortError') {
      return new DirectoryError('timeout', `building directory did not answer within ${timeoutMs} ms`);
    }
    return new DirectoryError('unreachable', `building directory unreachable (${(err as { code?: string }).code ?? name})`);
  }

  async function lookup(buildingId: string, claimsHeader: string): Promise<string[]> {
    const url = `${base}/domain/${encodeURIComponent(buildingId)}`;
    let response: Dispatcher.ResponseData;
    const signal = AbortSignal.timeout(timeoutMs);
    const pending = request(url, {
      method: 'GET',
      headers: { [CLAIMS_HEADER]: claimsHeader, accept: 'application/json' },
      signal,
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    });
    try {
      // Connecting included: undici alone would wait out its own connect timeout (see untilAbortedRequest).
      response = await untilAbortedRequest(pending, signal);
    } catch (err) {
      throw transportFailure(err);
    }
    let text = '';
    try {
      // A building's domains fit in a few hundred bytes; an endless or huge body is a broken directory,
      // not something to hold in memory.
      let bytes = 0;
      const decoder = new TextDecoder();
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        bytes += chunk.length;
        if (bytes > MAX_ANSWER_BYTES) {
          response.body.destroy();
          throw new DirectoryError('bad_body', `building directory answer is larger than ${MAX_ANSWER_BYTES} bytes`);
        }
        text += decoder.decode(chunk, { stream: true });
      }
      text += decoder.decode();
    } catch (err) {
      if (err instanceof DirectoryError) throw err;
      throw transportFailure(err);
    }
    if (response.statusCode < 200 || response.statusCode >= 300) {
      throw new DirectoryError('bad_status', `building directory answered ${response.statusCode}`, response.statusCode);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new DirectoryError('bad_body', 'building directory answered something that is not JSON');
    }
    const list = Array.isArray(body) ? body : (body as { domains?: unknown })?.domains;
    // Every entry a name (non-blank, no control characters): an empty one would route a notification
    // to no room and a socket to nothing, while counting as an answer.
    if (!Array.isArray(list) || !list.every((d): d is string => NonEmptyString.is(d))) {
      throw new DirectoryError('bad_body', 'building directory answer is not a list of domain names');
    }
    return [...new Set(list)];
  }

  /**
   * Lookups in flight, per building, of a caching client. Its answers are shared with every caller for
   * the TTL anyway, so callers that miss the cache at the same moment (a reconnect storm after a
   * failover) can share one request too, instead of each sending its own and timing out together.
   */
  const inFlight = new Map<string, Promise<string[]>>();

  async function lookupAndCache(cache: TtlCache<string[]>, buildingId: string, claimsHeader: string): Promise<string[]> {
    const domains = await lookup(buildingId, claimsHeader);
    if (domains.length > 0 || options.cacheEmpty === true) cache.set(buildingId, [...domains]);
    return domains;
  }

  /** Joins the lookup in flight for the building, or starts one; its failure reaches every caller. */
  function sharedLookup(cache: TtlCache<string[]>, buildingId: string, claimsHeader: string): Promise<string[]> {
    const pending = inFlight.get(buildingId);
    if (pending) return pending;
    const started = lookupAndCache(cache, buildingId, claimsHeader).finally(() => inFlight.delete(buildingId));
    inFlight.set(buildingId, started);
    return started;
  }

  return {
    async domainsOf(buildingId, claimsHeader) {
      // `.` and `..` are path segments, not names: a URL would resolve them to /domain/ or /. No
      // building can be named so in a directory addressed by path, so they belong to no domain.
      if (buildingId === '.' || buildingId === '..') return [];
      // Without a cache, every call is the caller's own lookup, with its own claims and its own answer.
      if (!cache) return lookup(buildingId, claimsHeader);
      // Copies in and out: a caller changing its answer must not change the cached or shared one.
      const hit = cache.get(buildingId);
      if (hit) return [...hit];
      return [...(await sharedLookup(cache, buildingId, claimsHeader))];
    },
  };
}
