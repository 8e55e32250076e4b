/**
 * Replicas contending for the store's locks in the lock takeover tests: stores on one database, each on
 * a client of its own, claims started a few milliseconds apart, and a lock left behind.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { MongoClient } from 'mongodb';
import { MongoNotificationStore } from '../../../../cloud/notification/store.js';
import { uniqueName, type Teardown } from './stack.js';

/** Claims start up to this many ms apart. */
const SPREAD_MS = 4;

/**
 * `count` stores on one database, each on a client of its own (closed at teardown), on the process's
 * monotonic clock unless given one, and waiting `recordLockWaitMs` for a record lock when given.
 */
export async function replicas(
  t: Teardown,
  uri: string,
  count: number,
  options: { monotonicClock?: () => number; recordLockWaitMs?: number } = {},
): Promise<MongoNotificationStore[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const client = new MongoClient(uri, { serverSelectionTimeoutMS: 10_000 });
      await client.connect();
      t.teardown(() => client.close());
      return new MongoNotificationStore(client.db(), { recipientsCacheMs: 0, ...options });
    }),
  );
}

/**
 * Runs `task` after a random pause of up to {@link SPREAD_MS}, as polling replicas' claims come: started
 * in lockstep, every read comes before every write and a race hides.
 */
export async function spread<T>(task: () => Promise<T>): Promise<T> {
  await sleep(Math.random() * SPREAD_MS);
  return task();
}

/** A lock document left by a holder that stopped, stamped a minute ago. */
export function expiredLock(id: string): { _id: string; owner: string; claimedAt: Date } {
  return { _id: id, owner: uniqueName('stopped'), claimedAt: new Date(Date.now() - 60_000) };
}
