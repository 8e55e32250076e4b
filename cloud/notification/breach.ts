/**
 * The breach path: one Kafka record in, one outcome out. A record is settled when this resolves; it
 * rejects only when the record could not be settled (the cooldown or the channel is unreachable), so
 * the consumer does not commit it and it is read again.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { metricOf } from '../../shared/catalog/metrics.js';
import { DirectoryError, type BuildingDirectory } from '../../shared/directory.js';
import { describeError } from '../../shared/errors.js';
import type { Notification } from '../../shared/notification.js';
import { systemClock, type Clock } from '../../shared/ttl-cache.js';
import { alertNotification, cooldownKey, parseAlertRecord, pushTopicOf, type AlertEvent } from './alert-event.js';
import type { Delivery } from './delivery.js';
import type { AlertOutcome, NotificationMetrics } from './metrics.js';
import type { Cooldown } from './redis.js';

export interface BreachDeps {
  cooldown: Cooldown;
  /** Cached for 15 minutes; empty and failed answers are never cached. */
  directory: BuildingDirectory;
  /** The encoded system identity the lookup is made with. */
  systemClaimsHeader: string;
  delivery: Delivery;
  metrics: NotificationMetrics;
  logger: Logger;
  clock?: Clock;
  newId?: () => string;
}

/** Where a record sits in the topic, for log lines. */
export interface RecordPosition {
  topic: string;
  partition: number;
  offset: string;
}

export class BreachHandler {
  private readonly clock: Clock;
  private readonly newId: () => string;

  constructor(private readonly deps: BreachDeps) {
    this.clock = deps.clock ?? systemClock;
    this.newId = deps.newId ?? randomUUID;
  }

  /** Settles one record and counts its outcome. */
  async handle(value: Buffer | null, position?: RecordPosition): Promise<AlertOutcome> {
    const outcome = await this.settle(value, position);
    this.deps.metrics.alertsConsumed.inc({ outcome });
    return outcome;
  }

  private async settle(value: Buffer | null, position?: RecordPosition): Promise<AlertOutcome> {
    const { logger } = this.deps;
    const parsed = parseAlertRecord(value);
    if (!parsed.ok) {
      logger.warn({ ...position, reason: parsed.reason }, 'malformed alert record; skipped');
      return 'malformed';
    }
    const alert = parsed.alert;
    if (!metricOf(alert.type)?.alertable) {
      logger.info({ ...position, metric: alert.type }, 'alert for a metric outside the alertable set; skipped');
      return 'unsupported_metric';
    }
    const key = cooldownKey(alert);
    if (!(await this.deps.cooldown.arm(key))) return 'suppressed';
    try {
      return await this.deliver(alert, key, position);
    } catch (err) {
      // Nothing reached the channel: disarm so the redelivery of this record is not suppressed.
      await this.deps.cooldown.release(key).catch((releaseErr: unknown) => {
        logger.error({ ...position, error: describeError(releaseErr) }, 'could not disarm cooldown after a failed delivery; the alert may be lost');
      });
      throw err;
    }
  }

  private async deliver(alert: AlertEvent, key: string, position?: RecordPosition): Promise<AlertOutcome> {
    const { logger, metrics } = this.deps;
    const createdAt = new Date(this.clock()).toISOString();
    let domains: string[] = [];
    let failure: string | undefined;
    try {
      domains = await this.deps.directory.domainsOf(alert.buildingId, this.deps.systemClaimsHeader);
    } catch (err) {
      failure = err instanceof DirectoryError ? err.code : describeError(err);
      metrics.directoryFailures.inc({ code: err instanceof DirectoryError ? err.code : 'unreachable' });
    }
    if (domains.length === 0) {
      await this.deps.delivery.publish([alertNotification(alert, { id: this.newId(), createdAt })]);
      logger.error(
        { ...position, buildingId: alert.buildingId, metric: alert.type, lookup: failure ?? 'no domains' },
        'alert unroutable: building domains unknown; published unscoped, no push',
      );
      return 'unroutable';
    }
    const byDomain = new Map<string, Notification>();
    for (const domainName of domains) byDomain.set(domainName, alertNotification(alert, { id: this.newId(), createdAt, domainName }));
    await this.deps.delivery.toDomains(byDomain, alert.type, pushTopicOf(key));
    return 'delivered';
  }
}
