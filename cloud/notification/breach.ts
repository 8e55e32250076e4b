/**
 * The breach path: Kafka records in, one outcome per record out.
 *
 * Records are settled a slice at a time. Parsing, the alertable check and repeats of a key this
 * process armed itself are settled synchronously; only the first record of each other key asks the
 * shared cooldown, and only a record that armed it is delivered. The answer says how many leading
 * records are settled: a record that could not be settled (the cooldown or the channel unreachable)
 * and everything after it are left for the consumer to read again, so nothing is committed unsettled.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { ALERTABLE_METRICS } from '../../shared/catalog/metrics.js';
import { DirectoryError, type BuildingDirectory } from '../../shared/directory.js';
import { describeError } from '../../shared/errors.js';
import type { Notification } from '../../shared/notification.js';
import { systemClock, type Clock } from '../../shared/ttl-cache.js';
import { alertNotification, cooldownKey, parseAlertRecord, pushTopicOf, type AlertEvent } from './alert-event.js';
import { mapSettled } from './concurrency.js';
import type { Delivery } from './delivery.js';
import { ALERT_OUTCOMES, type AlertOutcome, type NotificationMetrics } from './metrics.js';
import type { Cooldown } from './redis.js';

const ALERTABLE = new Set(ALERTABLE_METRICS);

export interface BreachDeps {
  cooldown: Cooldown;
  /** Cached for 15 minutes; empty and failed answers are never cached. */
  directory: BuildingDirectory;
  /** The encoded system identity the lookup is made with. */
  systemClaimsHeader: string;
  delivery: Delivery;
  metrics: NotificationMetrics;
  logger: Logger;
  /** Cooldown checks and deliveries in flight per slice. Default 256. */
  inFlight?: number;
  clock?: Clock;
  newId?: () => string;
}

/** Where a record sits in the topic, for log lines. */
export interface RecordPosition {
  topic: string;
  partition: number;
  offset: string;
}

/** A record as kafkajs hands it over: its value and offset. */
export interface AlertRecord {
  value: Buffer | null;
  offset?: string;
}

/** The partition a slice of records comes from. */
export interface RecordSource {
  topic: string;
  partition: number;
}

/** How a slice of records was settled. */
export interface Settlement {
  /** The outcome of each record; undefined for a record that is not settled. */
  outcomes: Array<AlertOutcome | undefined>;
  /** How many leading records are settled: their offsets may be committed. */
  settled: number;
  /** Why the record at `settled` could not be settled. */
  error?: unknown;
}

export class BreachHandler {
  private readonly clock: Clock;
  private readonly newId: () => string;
  private readonly counted: Record<AlertOutcome, { inc(by?: number): void }>;

  constructor(private readonly deps: BreachDeps) {
    this.clock = deps.clock ?? systemClock;
    this.newId = deps.newId ?? randomUUID;
    const counter = deps.metrics.alertsConsumed;
    this.counted = Object.fromEntries(ALERT_OUTCOMES.map((outcome) => [outcome, counter.labels({ outcome })])) as Record<AlertOutcome, { inc(by?: number): void }>;
  }

  /** Settles one record. Rejects when it could not be settled. */
  async handle(value: Buffer | null): Promise<AlertOutcome> {
    const result = await this.settle([{ value }]);
    const outcome = result.outcomes[0];
    if (result.settled === 0 || outcome === undefined) throw result.error;
    return outcome;
  }

  /** Settles records in order and counts the outcome of every settled one. */
  async settle(records: readonly AlertRecord[], source?: RecordSource): Promise<Settlement> {
    const { logger, cooldown } = this.deps;
    const where = (index: number): Partial<RecordPosition> => ({ ...source, offset: records[index]?.offset });
    const now = performance.now();
    const outcomes = new Array<AlertOutcome | undefined>(records.length);
    const asking = new Set<string>();
    const pending: Array<{ index: number; alert: AlertEvent; key: string }> = [];
    for (let index = 0; index < records.length; index++) {
      const parsed = parseAlertRecord(records[index]?.value ?? null);
      if (!parsed.ok) {
        logger.warn({ ...where(index), reason: parsed.reason }, 'malformed alert record; skipped');
        outcomes[index] = 'malformed';
        continue;
      }
      const alert = parsed.alert;
      if (!ALERTABLE.has(alert.type)) {
        logger.info({ ...where(index), metric: alert.type }, 'alert for a metric outside the alertable set; skipped');
        outcomes[index] = 'unsupported_metric';
        continue;
      }
      const key = cooldownKey(alert);
      // Armed by this process and still live, or asked for by an earlier record of this slice: either
      // way the key is armed by the time this record would ask.
      if (cooldown.armedHere(key, now) || asking.has(key)) {
        outcomes[index] = 'suppressed';
        continue;
      }
      asking.add(key);
      pending.push({ index, alert, key });
    }

    const results = await mapSettled(pending, this.deps.inFlight ?? 256, async ({ index, alert, key }) => {
      if (!(await cooldown.arm(key))) return 'suppressed';
      try {
        return await this.deliver(alert, key, () => where(index));
      } catch (err) {
        // Nothing reached the channel: disarm so the redelivery of this record is not suppressed.
        await cooldown.release(key).catch((releaseErr: unknown) => {
          logger.error({ ...where(index), error: describeError(releaseErr) }, 'could not disarm cooldown after a failed delivery; the alert may be lost');
        });
        throw err;
      }
    });
    let error: unknown;
    let firstFailure = records.length;
    results.forEach((result, i) => {
      const index = pending[i]?.index ?? records.length;
      if (result.ok) outcomes[index] = result.value;
      else if (index < firstFailure) {
        firstFailure = index;
        error = 'error' in result ? result.error : new Error('record skipped');
      }
    });
    for (let i = firstFailure; i < outcomes.length; i++) outcomes[i] = undefined;
    const tally = new Map<AlertOutcome, number>();
    for (let i = 0; i < firstFailure; i++) tally.set(outcomes[i] as AlertOutcome, (tally.get(outcomes[i] as AlertOutcome) ?? 0) + 1);
    for (const [outcome, count] of tally) this.counted[outcome].inc(count);
    if (firstFailure < records.length) {
      logger.error({ ...where(firstFailure), error: describeError(error) }, 'alert record could not be settled; it will be read again');
      return { outcomes, settled: firstFailure, error };
    }
    return { outcomes, settled: records.length };
  }

  private async deliver(alert: AlertEvent, key: string, where: () => Partial<RecordPosition>): Promise<AlertOutcome> {
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
        { ...where(), buildingId: alert.buildingId, metric: alert.type, lookup: failure ?? 'no domains' },
        'alert unroutable: building domains unknown; published unscoped, no push',
      );
      return 'unroutable';
    }
    const byDomain = new Map<string, Notification>();
    for (const domainName of domains) byDomain.set(domainName, alertNotification(alert, { id: this.newId(), createdAt, domainName }));
    await this.deps.delivery.toDomains(byDomain, alert.type, { topicOf: () => pushTopicOf(key) });
    return 'delivered';
  }
}
