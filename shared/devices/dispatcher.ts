/**
 * Where a long-running service's device commands go out: an undici Agent of their own, whose device
 * hosts are looked up through a bounded limiter (`shared/lookup.ts`). undici's connector looks a host up
 * with dns.lookup, on libuv's 4-thread pool, once per new connection; the command's timeout answers the
 * caller but cannot cancel the lookup. On the global dispatcher, four commands to a device whose name
 * never resolves would hold every thread, and every other lookup of the process (the building directory,
 * PostgreSQL, Redis and Kafka reconnects) would queue behind them, for all tenants.
 *
 * Devices live on private networks, so unlike pushes no address is refused here: the device URL comes
 * only from a registered sensor, never from a command. An endpoint on an IP literal is never looked up.
 */
import { Agent } from 'undici';
import { limitLookups, socketLookup, systemResolver, type Resolver } from '../lookup.js';
import { DEFAULT_DEVICE_TIMEOUT_MS } from './adapter.js';

/**
 * Device hosts looked up at once: two of libuv's 4 threads at most, the rest left to the process's other
 * lookups, files and crypto.
 */
export const DEFAULT_MAX_DEVICE_LOOKUPS = 2;

export interface DeviceDispatcherOptions {
  /**
   * The adapter's timeout (its `timeoutMs`). A connection attempt gives up after it; a command waits for
   * a lookup (a slot, then its answer) at most half of it, so it keeps time to connect and be answered.
   * Default {@link DEFAULT_DEVICE_TIMEOUT_MS}.
   */
  timeoutMs?: number;
  /** Device hosts looked up at once. Default {@link DEFAULT_MAX_DEVICE_LOOKUPS}. */
  maxLookups?: number;
  /** How device hosts are resolved. Default dns.lookup, so /etc/hosts applies. */
  resolve?: Resolver;
}

/**
 * The dispatcher of device commands, with bounded host lookups: at most `maxLookups` at once, one per
 * host (the commands needing a connection to a host while it is looked up share that lookup), and a host
 * whose lookup has not answered within its wait refused at once, with no lookup, for 30 s. The caller
 * owns it and destroys it on stop.
 *
 * @example
 * const dispatcher = createDeviceDispatcher({ timeoutMs: 5000 });
 * const devices = createDeviceAdapter({ catalog, sensors, timeoutMs: 5000, dispatcher });
 * // on stop: await dispatcher.destroy();
 */
export function createDeviceDispatcher(options: DeviceDispatcherOptions = {}): Agent {
  const timeoutMs = options.timeoutMs ?? DEFAULT_DEVICE_TIMEOUT_MS;
  const resolve = limitLookups(options.resolve ?? systemResolver, {
    maxInFlight: options.maxLookups ?? DEFAULT_MAX_DEVICE_LOOKUPS,
    waitMs: Math.ceil(timeoutMs / 2),
    subject: 'device host',
  });
  return new Agent({ connect: { timeout: timeoutMs, lookup: socketLookup(resolve) } });
}
