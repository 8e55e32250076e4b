/**
 * Delivery on both channels: one in-app notification per domain on the notifications channel, and a
 * Web Push to every device of the accounts opted in there. A device is pushed once per event even when
 * its account is opted in through several of the domains. Pushes share one bounded pool; one bad
 * endpoint never stops the others. A push service's 404 or 410 deletes that subscription.
 */
import type { Logger } from 'pino';
import { describeError } from '../../shared/errors.js';
import type { Notification } from '../../shared/notification.js';
import type { Semaphore } from './concurrency.js';
import type { NotificationMetrics } from './metrics.js';
import { endpointOrigin, type PushMessage, type PushSender } from './push.js';
import type { Publisher } from './redis.js';
import type { NotificationStore, Recipient } from './store.js';

export interface DeliveryReport {
  /** In-app notifications published. */
  inApp: number;
  /** Devices the push service accepted a message for. */
  push: number;
  pushFailed: number;
  pushRemoved: number;
}

export interface DeliveryDeps {
  publisher: Publisher;
  store: NotificationStore;
  push: PushSender;
  /** Shared by every delivery in the process: bounds pushes in flight. */
  pushPool: Semaphore;
  metrics: NotificationMetrics;
  logger: Logger;
}

const URGENCY = { info: 'low', warning: 'normal', danger: 'high' } as const;

export class Delivery {
  constructor(private readonly deps: DeliveryDeps) {}

  /** Publishes in-app notifications. Rejects when the channel cannot be reached. */
  async publish(notifications: readonly Notification[]): Promise<number> {
    await Promise.all(notifications.map((n) => this.deps.publisher.publish(n)));
    for (const n of notifications) this.deps.metrics.inAppPublished.inc({ kind: n.kind });
    return notifications.length;
  }

  /**
   * Publishes one notification per domain, then pushes to the opted-in devices of those domains.
   * `metric` selects who is opted in; none means anyone with an alertable metric on (manual alerts).
   * Push problems are logged and counted, never raised.
   */
  async toDomains(byDomain: ReadonlyMap<string, Notification>, metric: string | undefined, topic?: string): Promise<DeliveryReport> {
    const inApp = await this.publish([...byDomain.values()]);
    const report: DeliveryReport = { inApp, push: 0, pushFailed: 0, pushRemoved: 0 };
    let targets: Array<{ recipient: Recipient; notification: Notification }>;
    try {
      targets = await this.recipientsOf(byDomain, metric);
    } catch (err) {
      this.deps.logger.error({ error: describeError(err), domains: [...byDomain.keys()] }, 'push skipped: could not read device subscriptions');
      return report;
    }
    await Promise.all(
      targets.map(({ recipient, notification }) =>
        this.deps.pushPool.run(() => this.pushOne(recipient, { payload: JSON.stringify(notification), urgency: URGENCY[notification.severity], ...(topic ? { topic } : {}) }, report)),
      ),
    );
    return report;
  }

  private async recipientsOf(byDomain: ReadonlyMap<string, Notification>, metric: string | undefined) {
    const lists = await Promise.all([...byDomain.keys()].map((domain) => this.deps.store.recipientsIn(domain, metric)));
    const seen = new Set<string>();
    const targets: Array<{ recipient: Recipient; notification: Notification }> = [];
    [...byDomain.values()].forEach((notification, i) => {
      for (const recipient of lists[i] ?? []) {
        if (seen.has(recipient.subscription.endpoint)) continue;
        seen.add(recipient.subscription.endpoint);
        targets.push({ recipient, notification });
      }
    });
    return targets;
  }

  private async pushOne(recipient: Recipient, message: PushMessage, report: DeliveryReport): Promise<void> {
    const { metrics, logger } = this.deps;
    const endpoint = recipient.subscription.endpoint;
    try {
      const result = await this.deps.push.send(recipient.subscription, message);
      if (result.kind === 'sent') {
        report.push += 1;
        metrics.pushSent.inc();
      } else if (result.kind === 'gone') {
        await this.deps.store.removeDevice(endpoint);
        report.pushRemoved += 1;
        metrics.pushRemoved.inc();
        logger.info({ account: recipient.accountName, pushService: endpointOrigin(endpoint), status: result.status }, 'push subscription expired; deleted');
      } else {
        report.pushFailed += 1;
        metrics.pushFailed.inc({ reason: result.reason });
        logger.warn(
          { account: recipient.accountName, pushService: endpointOrigin(endpoint), reason: result.reason, status: result.status, detail: result.detail },
          'push failed; subscription kept',
        );
      }
    } catch (err) {
      report.pushFailed += 1;
      metrics.pushFailed.inc({ reason: 'unreachable' });
      logger.error({ account: recipient.accountName, pushService: endpointOrigin(endpoint), error: describeError(err) }, 'push failed; subscription kept');
    }
  }
}
