/**
 * A Map used as a memory of bounded size: insertion order is age, so the oldest entry is the first key.
 */

/**
 * Sets `key` as the newest entry of `memory`, forgetting the oldest once `memory` holds more than `max`.
 *
 * @example
 * rememberBounded(unreleased, alert.alertId, keys, 100_000);
 */
export function rememberBounded<V>(memory: Map<string, V>, key: string, value: V, max: number): void {
  memory.delete(key);
  memory.set(key, value);
  if (memory.size > max) {
    const oldest = memory.keys().next().value;
    if (oldest !== undefined) memory.delete(oldest);
  }
}
