/**
 * Where a long-running service's device commands go out: a dispatcher of their own, whose device hosts
 * are looked up through a bounded limiter (`shared/lookup.ts`), with connections kept for a bounded number
 * of device origins (`shared/origin-pools.ts`).
 *
 * Lookups: undici's connector looks a host up with dns.lookup, on libuv's 4-thread pool, once per new
 * connection; the command's timeout answers the caller but cannot cancel the lookup. On the global
 * dispatcher, four commands to a device whose name never resolves would hold every thread, and every
 * other lookup of the process (the building directory, PostgreSQL, Redis and Kafka reconnects) would
 * queue behind them, for all tenants.
 *
 * Pools: an undici Agent keeps a Pool (~20 KiB) for every origin it ever dispatched to, for the life of
 * the process. Device origins are as many as the sensors' endpoints (every host and port, and more with
 * DHCP churn), unreachable ones included, so the commands go through pools of the most recently commanded
 * origins only, which all share one connector.
 *
 * Devices live on private networks, so unlike pushes no address is refused here: the device URL comes
 * only from a registered sensor, never from a command. An endpoint on an IP literal is never looked up.
 */
import { Dispatcher, Pool, buildConnector, errors } from 'undici';
import { limitLookups, socketLookup, systemResolver, type Resolver } from '../lookup.js';
import { OriginPools } from '../origin-pools.js';
import { DEFAULT_DEVICE_TIMEOUT_MS } from './adapter.js';

/**
 * Device hosts looked up at once: two of libuv's 4 threads at most, the rest left to the process's other
 * lookups, files and crypto.
 */
export const DEFAULT_MAX_DEVICE_LOOKUPS = 2;

/**
 * Device origins (scheme, host and port) whose connection pools are kept at once. A pool is worth
 * keeping only while its connection is kept alive, a few seconds after a command, so this covers every
 * device commanded in the last moments of a busy service, and bounds the pools at about 5 MiB however
 * many devices are ever commanded.
 */
export const DEFAULT_MAX_DEVICE_ORIGINS = 256;

export interface DeviceDispatcherOptions {
  /**
   * The adapter's timeout (its `timeoutMs`). A connection attempt gives up after it; a command waits for
   * a lookup (a slot, then its answer) at most half of it, so it keeps time to connect and be answered.
   * Default {@link DEFAULT_DEVICE_TIMEOUT_MS}.
   */
  timeoutMs?: number;
  /** Device hosts looked up at once. Default {@link DEFAULT_MAX_DEVICE_LOOKUPS}. */
  maxLookups?: number;
  /**
   * Device origins whose connection pools are kept at once; a command to one more closes the pool of
   * the least recently commanded one (its commands in flight finish first). Default
   * {@link DEFAULT_MAX_DEVICE_ORIGINS}.
   */
  maxOrigins?: number;
  /** How device hosts are resolved. Default dns.lookup, so /etc/hosts applies. */
  resolve?: Resolver;
}

/**
 * The dispatcher of device commands, with bounded host lookups: at most `maxLookups` at once, one per
 * host (the commands needing a connection to a host while it is looked up share that lookup), and a host
 * whose lookup has not answered within its wait refused at once, with no lookup, for 30 s. Connections
 * are kept for the `maxOrigins` most recently commanded origins. The caller owns it and destroys it on
 * stop.
 *
 * @example
 * const dispatcher = createDeviceDispatcher({ timeoutMs: 5000 });
 * const devices = createDeviceAdapter({ catalog, sensors, timeoutMs: 5000, dispatcher });
 * // on stop: await dispatcher.destroy();
 */
export function createDeviceDispatcher(options: DeviceDispatcherOptions = {}): DeviceDispatcher {
  const timeoutMs = options.timeoutMs ?? DEFAULT_DEVICE_TIMEOUT_MS;
  const resolve = limitLookups(options.resolve ?? systemResolver, {
    maxInFlight: options.maxLookups ?? DEFAULT_MAX_DEVICE_LOOKUPS,
    waitMs: Math.ceil(timeoutMs / 2),
    subject: 'device host',
  });
  // Built once: a pool given connect options would build a connector (and TLS session cache) of its own.
  const connect = buildConnector({ timeout: timeoutMs, lookup: socketLookup(resolve) });
  const pools = new OriginPools(options.maxOrigins ?? DEFAULT_MAX_DEVICE_ORIGINS, (origin) => new Pool(origin, { connect }));
  return new DeviceDispatcher(pools);
}

/**
 * An undici dispatcher that sends each request to the pool of its origin, from {@link OriginPools}, in
 * place of an Agent that would keep every origin's pool. After `close` or `destroy` every request fails
 * without being sent, as an Agent's would.
 */
export class DeviceDispatcher extends Dispatcher {
  #closed = false;
  #destroyed = false;

  constructor(private readonly pools: OriginPools) {
    super();
  }

  /** Device origins whose connection pools are kept (at most `maxOrigins`). */
  get originsKept(): number {
    return this.pools.size;
  }

  /** True once `close` was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** True once `destroy` was called, or `close` has finished. */
  get destroyed(): boolean {
    return this.#destroyed;
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandlers): boolean {
    if (this.#destroyed || this.#closed) {
      const err = this.#destroyed ? new errors.ClientDestroyedError() : new errors.ClientClosedError();
      if (!handler.onError) throw err;
      handler.onError(err);
      return false;
    }
    const origin = typeof options.origin === 'string' ? options.origin : options.origin?.origin;
    if (!origin) throw new errors.InvalidArgumentError('opts.origin must be a non-empty string or URL.');
    return this.pools.poolFor(origin).dispatch(options, handler);
  }

  /** Lets the commands in flight finish, then closes every connection. */
  override close(): Promise<void>;
  override close(callback: () => void): void;
  override close(callback?: () => void): Promise<void> | void {
    this.#closed = true;
    const done = this.pools.close().then(() => {
      this.#destroyed = true;
    });
    return settle(done, callback);
  }

  /** Aborts the commands in flight (with `err` when given) and closes every connection. */
  override destroy(): Promise<void>;
  override destroy(err: Error | null): Promise<void>;
  override destroy(callback: () => void): void;
  override destroy(err: Error | null, callback: () => void): void;
  override destroy(errOrCallback?: Error | null | (() => void), callback?: () => void): Promise<void> | void {
    const err = typeof errOrCallback === 'function' ? null : (errOrCallback ?? null);
    this.#destroyed = true;
    return settle(this.pools.destroy(err), typeof errOrCallback === 'function' ? errOrCallback : callback);
  }
}

/** A promise for a caller that passed no callback; else the callback, called once it settles. */
function settle(done: Promise<void>, callback: (() => void) | undefined): Promise<void> | void {
  if (!callback) return done;
  void done.then(callback);
}
