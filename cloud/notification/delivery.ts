/**
 * Delivery on both channels: one in-app notification per domain on the notifications channel, and a
 * Web Push to every device of the accounts opted in there. A device is pushed once per event even when
 * its account is opted in through several of the domains. Pushes share one bounded pool, of which one
 * account's pushes hold at most a few slots at once (the rest wait in that account's own line); one bad
 * endpoint never stops the others. A push service's 410 or 404 deletes that subscription (unless its
 * endpoint was re-registered with other keys while the push was in flight); any other
 * failure (a 403 too: usually a VAPID key mismatch) is logged and the subscription kept.
 * A push payload is the notification, with its message shortened when it would not fit the 4096
 * octets a push service must accept (`push-payload.ts`); the in-app notification is never shortened.
 *
 * On the breach path a record is settled once its in-app notification is published; its push fan-out
 * then runs in the background. Waiting would add no guarantee, since a failed push is never retried
 * and a redelivered record is a duplicate of its alertId. The background is bounded (a new fan-out
 * waits for room) and `drain()` waits for all of it at shutdown, and for the fan-outs the /trigger route
 * waits for itself. Those count against the same bound, one event each as a breach event does, and wait
 * for room before their pushes start: concurrent /trigger calls cannot queue pushes without bound, and
 * a breach slice waits behind them as behind its own.
 */
import type { Logger } from 'pino';
import { describeError } from '../../shared/errors.js';
import type { Notification } from '../../shared/notification.js';
import { PerKeyLimit, type Semaphore } from './concurrency.js';
import type { NotificationMetrics } from './metrics.js';
import { endpointOrigin, type PushMessage, type PushSender } from './push.js';
import { pushPayloadOf } from './push-payload.js';
import type { PublishOutcome, Publisher } from './redis.js';
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
  /**
   * Slots of `pushPool` one account's pushes may hold, or wait in its line for, at once. Default
   * {@link DEFAULT_PUSH_SLOTS_PER_ACCOUNT}.
   */
  pushSlotsPerAccount?: number;
  metrics: NotificationMetrics;
  logger: Logger;
  /**
   * Events whose push fan-out runs in the background, at most; past it a new fan-out waits for room.
   * A /trigger's fan-out (waited for by its caller) counts as one event too. Default 10,000: about two
   * full slices of the breach path (each event holds its few notifications), so a slice is not held up
   * while the previous one waits for its recipient lists.
   */
  maxBackground?: number;
}

export interface FanOutOptions {
  /** Push topic, computed only when there is a device to push to. */
  topicOf?: () => string;
  /** Wait for the pushes and report them (the /trigger route); otherwise they run in the background. */
  waitForPushes?: boolean;
}

/**
 * A push to a host that accepts the connection and never answers holds its slot for the whole push
 * timeout, and an account chooses its endpoints (up to 50 of them). Two slots per account keep the
 * pushes of every other account going while one account's endpoints hang, and still let an account's
 * pushes overlap a slow push service's answer.
 */
export const DEFAULT_PUSH_SLOTS_PER_ACCOUNT = 2;

const URGENCY = { info: 'low', warning: 'normal', danger: 'high' } as const;

/** One breach event whose in-app notifications are published: pushed to the devices of its domains. */
export interface AlertFanOut {
  byDomain: ReadonlyMap<string, Notification>;
  /** Who is opted in; none means anyone with an alertable metric on. */
  metric: string | undefined;
  /** What the push topic is made from; no topic when absent. */
  topicSource?: string;
}

type Target = { recipient: Recipient; notification: Notification };

/** The push message of each notification, made once however many devices it goes to. */
function pushMessages(topic: string | undefined): (notification: Notification) => PushMessage {
  const made = new Map<Notification, PushMessage>();
  return (notification) => {
    let message = made.get(notification);
    if (message === undefined) {
      message = { payload: pushPayloadOf(notification), urgency: URGENCY[notification.severity], ...(topic ? { topic } : {}) };
      made.set(notification, message);
    }
    return message;
  };
}
type RecipientList = { ok: true; recipients: Recipient[] } | { ok: false; error: unknown };

function listKey(domain: string, metric: string | undefined): string {
  return `${domain}\u0000${metric ?? ''}`;
}

/** Each device of the domains' recipients once, with the notification of the first domain it is in. */
function targetsOf(byDomain: ReadonlyMap<string, Notification>, metric: string | undefined, lists: ReadonlyMap<string, RecipientList>): { ok: true; targets: Target[] } | { ok: false; error: unknown } {
  const seen = new Set<string>();
  const targets: Target[] = [];
  for (const [domain, notification] of byDomain) {
    const list = lists.get(listKey(domain, metric));
    if (list === undefined) continue;
    if (!list.ok) return list;
    for (const recipient of list.recipients) {
      if (seen.has(recipient.subscription.endpoint)) continue;
      seen.add(recipient.subscription.endpoint);
      targets.push({ recipient, notification });
    }
  }
  return { ok: true, targets };
}

/**
 * The push audience of a manual alert ({@link Delivery.toDomains}): every device opted in to any
 * alertable metric in the domains, since a manual alert names no metric.
 */
export const ANY_ALERTABLE_METRIC = undefined;

export class Delivery {
  private readonly published: Record<Notification['kind'], { inc(by?: number): void }>;
  private readonly background = new Set<Promise<void>>();
  private backgroundWeight = 0;
  private waiting = 0;
  /** Every push goes through its account's line to the shared pool. */
  private readonly pushLines: PerKeyLimit;

  constructor(private readonly deps: DeliveryDeps) {
    this.pushLines = new PerKeyLimit(deps.pushPool, deps.pushSlotsPerAccount ?? DEFAULT_PUSH_SLOTS_PER_ACCOUNT);
    const counter = deps.metrics.inAppPublished;
    this.published = { alert: counter.labels({ kind: 'alert' }), manual: counter.labels({ kind: 'manual' }) };
  }

  /** Publishes in-app notifications. Rejects when the channel cannot be reached. */
  async publish(notifications: readonly Notification[]): Promise<number> {
    if (notifications.length === 1) await this.deps.publisher.publish(notifications[0] as Notification);
    else await Promise.all(notifications.map((n) => this.deps.publisher.publish(n)));
    for (const n of notifications) this.published[n.kind].inc();
    return notifications.length;
  }

  /**
   * Publishes in-app notifications in one round trip per thousand and counts those published.
   * `alertOf` gives, per notification, the seen key of its alert, which the publish sets published
   * (see {@link Publisher.publishAll}). Per notification, its outcome: one published elsewhere (by
   * another replica that read the same record) is not counted here.
   */
  async publishEach(notifications: readonly Notification[], alertOf: readonly string[]): Promise<PublishOutcome[]> {
    const outcomes = await this.deps.publisher.publishAll(notifications, alertOf);
    const published = { alert: 0, manual: 0 };
    outcomes.forEach((outcome, i) => {
      if (outcome === 'published') published[(notifications[i] as Notification).kind] += 1;
    });
    if (published.alert > 0) this.published.alert.inc(published.alert);
    if (published.manual > 0) this.published.manual.inc(published.manual);
    return outcomes;
  }

  /**
   * Publishes one notification per domain, then pushes to the opted-in devices of those domains.
   * `metric` selects who is opted in; {@link ANY_ALERTABLE_METRIC} means anyone with an alertable metric
   * on (manual alerts).
   * Rejects only when the publish fails; push problems are logged and counted, never raised.
   */
  async toDomains(byDomain: ReadonlyMap<string, Notification>, metric: string | undefined, options: FanOutOptions = {}): Promise<DeliveryReport> {
    // The recipient query runs alongside the publish; pushes go out only once the publish succeeded.
    const recipients = this.recipientsOf(byDomain, metric).then(
      (targets) => ({ ok: true as const, targets }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    const inApp = await this.publish([...byDomain.values()]);
    const report: DeliveryReport = { inApp, push: 0, pushFailed: 0, pushRemoved: 0 };
    const pushAll = () => this.pushAll(byDomain, recipients, report, options.topicOf);
    if (options.waitForPushes) {
      // The in-app notification is out at once; the pushes wait for room like a breach event's, and are
      // tracked so that a stop drains them too rather than closing the sender under them.
      await this.whenRoom(1, pushAll);
      return report;
    }
    await this.inBackground(pushAll(), 1);
    return report;
  }

  /**
   * Pushes, in the background, the already published notifications of several events (a slice of the
   * breach path): each event to the opted-in devices of its domains. The recipients of a domain and
   * metric are read once for all the events; `topicOf(topicSource)` names an event's push topic, and is
   * asked only when there is a device to push to. Resolves once there is room in the background.
   */
  async pushInBackground(events: readonly AlertFanOut[], topicOf: (source: string) => string): Promise<void> {
    if (events.length === 0) return;
    await this.inBackground(this.pushEvents(events, topicOf), events.length);
  }

  private async pushEvents(events: readonly AlertFanOut[], topicOf: (source: string) => string): Promise<void> {
    const asked = new Map<string, Promise<Recipient[]>>();
    for (const { byDomain, metric } of events) {
      for (const domain of byDomain.keys()) {
        const key = listKey(domain, metric);
        if (!asked.has(key)) asked.set(key, this.deps.store.recipientsIn(domain, metric));
      }
    }
    const lists = new Map<string, { ok: true; recipients: Recipient[] } | { ok: false; error: unknown }>();
    await Promise.all(
      [...asked].map(([key, list]) =>
        list.then(
          (recipients) => void lists.set(key, { ok: true, recipients }),
          (error: unknown) => void lists.set(key, { ok: false, error }),
        ),
      ),
    );
    const pushes: Array<Promise<void>> = [];
    for (const { byDomain, metric, topicSource } of events) {
      const found = targetsOf(byDomain, metric, lists);
      if (!found.ok) {
        this.deps.logger.error({ error: describeError(found.error), domains: [...byDomain.keys()] }, 'push skipped: could not read device subscriptions');
        continue;
      }
      if (found.targets.length === 0) continue;
      const report: DeliveryReport = { inApp: byDomain.size, push: 0, pushFailed: 0, pushRemoved: 0 };
      const messageOf = pushMessages(topicSource === undefined ? undefined : topicOf(topicSource));
      for (const { recipient, notification } of found.targets) {
        const message = messageOf(notification);
        pushes.push(this.pushInLine(recipient, message, report));
      }
    }
    await Promise.all(pushes);
  }

  /** Tracks background work worth `weight` fan-outs; waits while more than the bound are running. */
  private async inBackground(work: Promise<void>, weight: number): Promise<void> {
    this.track(work, weight);
    while (this.backgroundWeight > (this.deps.maxBackground ?? 10_000) && this.background.size > 1) await Promise.race(this.background);
  }

  /**
   * Starts `work` once there is room for `weight` more in the background (or nothing else runs), counts
   * it there until it settles, and resolves when it has.
   */
  private async whenRoom(weight: number, work: () => Promise<void>): Promise<void> {
    if (this.isFull(weight)) {
      this.waiting += 1;
      try {
        while (this.isFull(weight)) await Promise.race(this.background);
      } finally {
        this.waiting -= 1;
      }
    }
    // Started and tracked in the same turn as the check, so no other waiter takes the same room.
    const running = work();
    this.track(running.catch(() => undefined), weight);
    await running;
  }

  private isFull(weight: number): boolean {
    return this.backgroundWeight + weight > (this.deps.maxBackground ?? 10_000) && this.background.size > 0;
  }

  /** Accounts with pushes running or waiting in their line; for tests (lines are dropped once empty). */
  get accountsWithPushesPending(): number {
    return this.pushLines.keysPending;
  }

  /** Fan-outs waited for by their caller (the /trigger route's) still waiting for room to start; for tests. */
  get waitingForRoom(): number {
    return this.waiting;
  }

  /** Counts `work` as running until it settles, for {@link drain}; `weight` counts against the bound. */
  private track(work: Promise<void>, weight: number): void {
    this.background.add(work);
    this.backgroundWeight += weight;
    void work.finally(() => {
      this.background.delete(work);
      this.backgroundWeight -= weight;
    });
  }

  /**
   * Waits for every push fan-out, in the background or waited for by a caller (the /trigger route), or
   * at most `timeoutMs`. True when nothing is left running. A fan-out still waiting for room is waited
   * for too: it starts as the others finish.
   */
  async drain(timeoutMs = Number.POSITIVE_INFINITY): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    while (this.background.size > 0 || this.waiting > 0) {
      const left = deadline - performance.now();
      if (left <= 0) return false;
      let timer: NodeJS.Timeout | undefined;
      const expired = Number.isFinite(left) ? new Promise<void>((resolve) => (timer = setTimeout(resolve, left))) : new Promise<void>(() => undefined);
      await Promise.race([Promise.all(this.background), expired]);
      clearTimeout(timer);
    }
    return true;
  }

  private async pushAll(
    byDomain: ReadonlyMap<string, Notification>,
    recipients: Promise<{ ok: true; targets: Array<{ recipient: Recipient; notification: Notification }> } | { ok: false; error: unknown }>,
    report: DeliveryReport,
    topicOf?: () => string,
  ): Promise<void> {
    const found = await recipients;
    if (!found.ok) {
      this.deps.logger.error({ error: describeError(found.error), domains: [...byDomain.keys()] }, 'push skipped: could not read device subscriptions');
      return;
    }
    if (found.targets.length === 0) return;
    const messageOf = pushMessages(topicOf?.());
    await Promise.all(
      found.targets.map(({ recipient, notification }) => {
        const message = messageOf(notification);
        return this.pushInLine(recipient, message, report);
      }),
    );
  }

  private async recipientsOf(byDomain: ReadonlyMap<string, Notification>, metric: string | undefined) {
    const lists = new Map<string, { ok: true; recipients: Recipient[] }>();
    await Promise.all([...byDomain.keys()].map(async (domain) => lists.set(listKey(domain, metric), { ok: true, recipients: await this.deps.store.recipientsIn(domain, metric) })));
    const found = targetsOf(byDomain, metric, lists);
    return found.ok ? found.targets : [];
  }

  /** Pushes once its account's line lets it into the shared pool and a slot there is free. */
  private pushInLine(recipient: Recipient, message: PushMessage, report: DeliveryReport): Promise<void> {
    return this.pushLines.run(recipient.accountName, () => this.pushOne(recipient, message, report));
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
        const where = { account: recipient.accountName, pushService: endpointOrigin(endpoint), status: result.status };
        let removed: boolean;
        try {
          removed = await this.deps.store.removeDevice(endpoint, recipient.subscription.keys);
        } catch (err) {
          // The push service answered; the database failed. Not a push failure (`unreachable` would send
          // someone looking at the network to the push service): the next push to it answers gone again.
          logger.error({ ...where, error: describeError(err) }, 'push subscription expired; deleting it failed, it is kept');
          return;
        }
        if (removed) {
          report.pushRemoved += 1;
          metrics.pushRemoved.inc();
          logger.info(where, 'push subscription expired; deleted');
        } else {
          // Deleted meanwhile (another push to the same dead endpoint, another replica), or re-registered
          // with other keys: the subscription the answer was about is no longer stored, so nothing failed
          // and nothing was kept. A re-registered endpoint's own next push decides.
          logger.info(where, 'push subscription expired, but its endpoint was deleted or re-registered meanwhile; nothing to delete');
        }
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
