/**
 * A Delivery wired as main.ts wires it, on the local stack, around a push sender the test made (its own
 * timeout) and a shared push pool of the test's size: a fresh database, a unique channel and key
 * prefix. Drained at teardown. For tests of the push fan-out itself; the harness wires the whole service.
 */
import { Semaphore } from '../../../../cloud/notification/concurrency.js';
import { Delivery } from '../../../../cloud/notification/delivery.js';
import { createMetrics, type NotificationMetrics } from '../../../../cloud/notification/metrics.js';
import type { PushSender } from '../../../../cloud/notification/push.js';
import { RedisPublisher } from '../../../../cloud/notification/redis.js';
import { MongoNotificationStore, type NotificationStore } from '../../../../cloud/notification/store.js';
import type { Db } from 'mongodb';
import { silentLogger, type Logger } from '../../../../shared/logger.js';
import type { Notification } from '../../../../shared/notification.js';
import { deleteKeys, freshMongo, redisClient, uniqueName, type Teardown } from './stack.js';

/**
 * `storeSeenByDelivery` may wrap the real store the delivery is given (to make one of its calls fail as
 * the database would); the store returned is the real one, for the test's own setup.
 */
export async function startDeliveryOnStack(
  t: Teardown,
  options: {
    push: PushSender;
    pushSlots: number;
    storeSeenByDelivery?: (store: MongoNotificationStore) => NotificationStore;
    metrics?: NotificationMetrics;
    logger?: Logger;
  },
): Promise<{ delivery: Delivery; store: MongoNotificationStore; db: Db }> {
  const { db } = await freshMongo(t);
  const store = new MongoNotificationStore(db, { recipientsCacheMs: 0 });
  await store.start();
  const redis = redisClient(t);
  const keyPrefix = `${uniqueName('notif-test')}:`;
  t.teardown(() => deleteKeys(redis, keyPrefix));
  const delivery = new Delivery({
    publisher: new RedisPublisher(redis, { channel: uniqueName('notifications'), keyPrefix }),
    store: options.storeSeenByDelivery?.(store) ?? store,
    push: options.push,
    pushPool: new Semaphore(options.pushSlots),
    metrics: options.metrics ?? createMetrics({ defaults: false }),
    logger: options.logger ?? silentLogger(),
  });
  t.teardown(() => delivery.drain());
  return { delivery, store, db };
}

/** A temperature alert of a fresh building in `domainName`, as the breach path makes it. */
export function temperatureAlertIn(domainName: string): Notification {
  return {
    id: uniqueName('n'),
    kind: 'alert',
    severity: 'danger',
    title: 'Temperature high',
    message: 'Room r1 is at 31',
    buildingId: uniqueName('b'),
    roomId: 'r1',
    metric: 'temperature',
    field: 'temperature',
    domainName,
    createdAt: new Date().toISOString(),
  };
}
