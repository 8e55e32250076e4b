/**
 * The breach path: Kafka records in, one outcome per record out.
 *
 * Records are settled a slice at a time. Parsing, the alertable check and repeats of a key this
 * process armed itself are settled synchronously; only the first record of each other key asks the
 * shared store, which marks its alertId seen and, when it was not seen before, arms its cooldown. A
 * duplicate alertId or a key already armed is suppressed; a duplicate leaves the key untouched, so the
 * next record of the slice with that key then asks in its place. Only a record that armed its key has
 * its building looked up and is delivered. The answer says how many leading records are settled: a
 * record that could not be settled (the cooldown or the channel unreachable) and everything after it
 * are left for the consumer to read again, so nothing is committed unsettled. An alert after such a
 * record that was delivered all the same is remembered: read again, it is settled with the outcome of
 * its delivery (no Redis call, nothing sent twice), so it is counted `delivered` once, not taken for a
 * duplicate of itself and counted `suppressed`.
 *
 * An alert armed and not published (its publish failed, the process stopped, a reply was lost) is
 * never released: its seen mark stays pending in Redis, the only place every replica sees, naming the
 * record (topic, partition, offset) that armed it. That record is not settled, so it is read again,
 * and whoever reads it is answered `armed` and delivers it; another record of the same alertId is
 * still a duplicate. The key is forgotten here, so the read asks Redis instead of being suppressed
 * from memory.
 *
 * A publish call that failed without an answer may have run all the same. The alerts it held are
 * remembered with their fan-outs: read again and found published by this replica's own call
 * (`published-here`), such an alert is settled as delivered then, and its pushes, never sent, go out
 * now. An alert another replica published first (two replicas read the same record during a rebalance)
 * is answered `elsewhere` by the publish and counted `suppressed`: its pushes are that replica's.
 *
 * An alertId is a duplicate only once it asked Redis. A record suppressed from memory (its key armed
 * here and live) is suppressed because of its key and leaves no seen mark, so its resend after the
 * cooldown expired is delivered as a new alert.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { ReceivedAlert } from '../../shared/alert-event.js';
import { ALERTABLE_METRICS } from '../../shared/catalog/metrics.js';
import { DirectoryError, type BuildingDirectory } from '../../shared/directory.js';
import { describeError } from '../../shared/errors.js';
import type { Notification } from '../../shared/notification.js';
import { systemClock, type Clock } from '../../shared/ttl-cache.js';
import { alertNotification, cooldownKey, parseAlertRecord, pushTopicOf, seenKey } from './alert-event.js';
import { rememberBounded } from './bounded-memory.js';
import { mapSettled } from './concurrency.js';
import type { AlertFanOut, Delivery } from './delivery.js';
import { ALERT_OUTCOMES, type AlertOutcome, type NotificationMetrics } from './metrics.js';
import { ALERTS_PER_CALL, type AlertKeys, type Arming, type Cooldown, type PublishOutcome } from './redis.js';

const ALERTABLE = new Set(ALERTABLE_METRICS);

/**
 * Alerts delivered but not yet settled (they came after a record that could not be settled), at most.
 * Past it the oldest is forgotten: read again, it is counted as the duplicate it then is.
 */
const MAX_UNSETTLED_DELIVERIES = 100_000;

/**
 * Alerts whose publish call failed without an answer, remembered with what delivering them came to, at
 * most. Past it the oldest is forgotten: if that call had published it, its pushes are not sent.
 */
const MAX_OWED_DELIVERIES = 10_000;

/** What a publish call that failed without an answer may have delivered: its pushes are still owed. */
interface OwedDelivery {
  outcome: 'delivered' | 'unroutable';
  /** The alert's fan-out, as it was published; none for an alert published unscoped. */
  event?: AlertFanOut;
  /** How many in-app notifications the call published for it: counted once it is known they went out. */
  notifications: number;
  /** For an alert published unscoped: why its building's domains are unknown, for the error line. */
  lookup?: string;
}

export interface BreachDeps {
  cooldown: Cooldown;
  /** Cached for 15 minutes; empty and failed answers are never cached. */
  directory: BuildingDirectory;
  /** The encoded system identity the lookup is made with. */
  systemClaimsHeader: string;
  delivery: Delivery;
  metrics: NotificationMetrics;
  logger: Logger;
  /** Directory lookups in flight per slice. Default 64. */
  lookupsInFlight?: number;
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

/** A record that asks the shared cooldown. */
interface Pending {
  index: number;
  alert: ReceivedAlert;
  keys: AlertKeys;
  outcome?: AlertOutcome;
}

export class BreachHandler {
  private readonly clock: Clock;
  private readonly newId: () => string;
  private readonly counted: Record<AlertOutcome, { inc(by?: number): void }>;
  /**
   * alertId → outcome of alerts delivered (or published unscoped) by a read that could not settle them:
   * a record before them failed, so they will be read again. Insertion order is age.
   */
  private readonly unsettledDeliveries = new Map<string, AlertOutcome>();
  /**
   * alertId → the delivery of alerts whose publish call failed without an answer: Redis may have run it.
   * Read again, such an alert is answered `armed` when it was not published (and is delivered afresh),
   * and `published-here` when that call published it: then its pushes, never sent, go out now.
   */
  private readonly owedDeliveries = new Map<string, OwedDelivery>();

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
    // A record's identity across reads and replicas, `{topic}/{partition}/{offset}` (the parts known): a
    // pending seen mark is taken over only by a read of the record that armed it.
    const partitionId = `${source?.topic ?? ''}/${source?.partition ?? ''}/`;
    const recordId = (index: number): string => partitionId + (records[index]?.offset ?? '');
    const now = performance.now();
    const outcomes = new Array<AlertOutcome | undefined>(records.length);
    // Records whose outcome comes from an earlier read that delivered them: index → alertId.
    const redelivered = new Map<number, string>();
    const claimed = new Set<string>();
    const pending: Pending[] = [];
    // Per cooldown key, the later records of the slice: suppressed once an earlier record armed the key
    // or found it armed, but asked in its place when the earlier one was a duplicate (key untouched).
    const waiting = new Map<string, Pending[]>();
    // The records certainly suppressed by a key armed here, read from their bytes (an alert storm is
    // mostly these). Not while an earlier read's deliveries are owed: such a record's outcome is its
    // delivery's, which only the general path looks up.
    const armedRepeats = this.unsettledDeliveries.size === 0 ? cooldown.suppressedHere?.(records, now) : undefined;
    for (let index = 0; index < records.length; index++) {
      if (armedRepeats !== undefined && armedRepeats[index] === 1) {
        outcomes[index] = 'suppressed';
        continue;
      }
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
      // Delivered by an earlier read of this record that could not settle it. A resend of the same
      // alertId later in the slice is not: it takes the path below.
      const earlier = this.unsettledDeliveries.get(alert.alertId);
      if (earlier !== undefined && !claimed.has(alert.alertId)) {
        claimed.add(alert.alertId);
        redelivered.set(index, alert.alertId);
        outcomes[index] = earlier;
        continue;
      }
      const key = cooldownKey(alert);
      // Armed by this process and still live: suppressed without a round trip.
      if (cooldown.armedHere(key, now)) {
        outcomes[index] = 'suppressed';
        continue;
      }
      const record: Pending = { index, alert, keys: { cooldown: key, seen: seenKey(alert) } };
      const queue = waiting.get(key);
      if (queue) {
        record.outcome = 'suppressed';
        queue.push(record);
        continue;
      }
      waiting.set(key, []);
      pending.push(record);
    }

    const asked = [...pending, ...[...waiting.values()].flat()];
    const failures = await this.armAndDeliver(pending, waiting, where, recordId);
    for (const p of asked) if (!failures.has(p.index)) outcomes[p.index] = p.outcome;
    let error: unknown;
    let firstFailure = records.length;
    for (const [index, failure] of failures) {
      if (index < firstFailure) {
        firstFailure = index;
        error = failure;
      }
    }
    for (const [index, alertId] of redelivered) if (index < firstFailure) this.unsettledDeliveries.delete(alertId);
    for (const p of asked) {
      if (p.index > firstFailure && (p.outcome === 'delivered' || p.outcome === 'unroutable')) rememberBounded(this.unsettledDeliveries, p.alert.alertId, p.outcome, MAX_UNSETTLED_DELIVERIES);
    }
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

  /**
   * Arms the cooldown of the pending records, {@link ALERTS_PER_CALL} a call (what one script call of
   * the Redis adapter holds), and delivers those that armed it: as soon as a call answers, its
   * records' buildings are looked up and their in-app notifications published, while the next call
   * arms. The first records of an alert storm are mostly firsts of their keys, so this overlaps the
   * three waits (Redis, the directory, Redis again) instead of adding them up. Publishes go out in
   * arming order. A record whose alertId was already seen, or whose key was already armed, is
   * suppressed and never looked up; a duplicate leaves its key untouched, so the next record waiting
   * on that key asks in its place, in one more round. Sets each record's outcome; answers the records
   * that could not be settled, with why. The pushes of every delivered record go out in the background
   * once all are published.
   */
  private async armAndDeliver(
    pending: readonly Pending[],
    waiting: ReadonlyMap<string, Pending[]>,
    where: (index: number) => Partial<RecordPosition>,
    recordId: (index: number) => string,
  ): Promise<Map<number, unknown>> {
    const { cooldown, delivery } = this.deps;
    const failures = new Map<number, unknown>();
    const deliveries: Array<Promise<AlertFanOut[]>> = [];
    // Alerts a lost publish reply left undelivered here, published all the same: their pushes.
    const owedPushes: AlertFanOut[] = [];
    // Resolved once the previous delivery published: the next one publishes after it.
    let turn: Promise<void> = Promise.resolve();
    const fail = (records: readonly Pending[], err: unknown) => {
      for (const { index } of records) failures.set(index, err);
    };
    rounds: for (let asking = pending; asking.length > 0; ) {
      const next: Pending[] = [];
      for (let start = 0; start < asking.length; start += ALERTS_PER_CALL) {
        const call = asking.slice(start, start + ALERTS_PER_CALL);
        for (const p of call) p.keys.record ??= recordId(p.index);
        let armed: Array<Arming | Error>;
        try {
          armed = await cooldown.armAll(call.map((p) => p.keys));
        } catch (err) {
          // This call's records and every one not asked yet stay unsettled, the followers of this
          // round's duplicates too (they never asked in their place); the calls before it delivered.
          fail(asking.slice(start), err);
          fail(next, err);
          break rounds;
        }
        const won: Pending[] = [];
        call.forEach((p, i) => {
          const result = armed[i];
          const owed = result === 'armed' || result === 'published-here' ? this.owedDeliveries.get(p.alert.alertId) : undefined;
          if (owed !== undefined) this.owedDeliveries.delete(p.alert.alertId);
          if (result === 'armed') won.push(p);
          else if (result === 'published-here' && owed !== undefined) {
            // Published by a call of this replica whose answer was lost: delivered then, pushed now.
            p.outcome = owed.outcome;
            this.deps.metrics.inAppPublished.labels({ kind: 'alert' }).inc(owed.notifications);
            if (owed.event !== undefined) owedPushes.push(owed.event);
            else this.logUnroutable(p, where, owed.lookup ?? 'no domains');
          } else if (result === 'cooling' || result === 'duplicate' || result === 'published-here') p.outcome = 'suppressed';
          else failures.set(p.index, result ?? new Error('no reply from redis'));
          const follower = result === 'duplicate' || result === 'published-here' ? waiting.get(p.keys.cooldown)?.shift() : undefined;
          if (follower) next.push(follower);
        });
        if (won.length === 0) continue;
        const previous = turn;
        let published!: () => void;
        turn = new Promise<void>((resolve) => (published = resolve));
        deliveries.push(this.deliver(won, failures, where, previous, published));
      }
      asking = next;
    }
    const toPush = [...owedPushes, ...(await Promise.all(deliveries)).flat()];
    await delivery.pushInBackground(toPush, pushTopicOf);
    return failures;
  }

  /**
   * Looks up the buildings of records that armed their cooldown, then, once `after` resolved (the
   * previous delivery published), publishes their in-app notifications in one round trip and calls
   * `published`. Each record's seen mark is set published in the call that publishes its last
   * notification. Sets each record's outcome and records failures; a record that failed has its key
   * forgotten here (see {@link Cooldown.forgetArmed}). Answers the push fan-outs of the delivered
   * records. Never rejects.
   */
  private async deliver(
    won: readonly Pending[],
    failures: Map<number, unknown>,
    where: (index: number) => Partial<RecordPosition>,
    after: Promise<void>,
    published: () => void,
  ): Promise<AlertFanOut[]> {
    const { cooldown, delivery } = this.deps;
    let domainsByBuilding: Map<string, { domains: string[]; failure?: string }>;
    const createdAt = new Date(this.clock()).toISOString();
    const notifications: Notification[] = [];
    const owners: number[] = [];
    const events: Array<AlertFanOut | undefined> = [];
    let outcomes: PublishOutcome[];
    try {
      domainsByBuilding = await this.routesOf(won);
      won.forEach((p, w) => {
        const { domains } = domainsByBuilding.get(p.alert.buildingId) ?? { domains: [] };
        if (domains.length === 0) {
          notifications.push(alertNotification(p.alert, { id: this.newId(), createdAt }));
          owners.push(w);
          events.push(undefined);
          return;
        }
        const byDomain = new Map<string, Notification>();
        const base = alertNotification(p.alert, { id: '', createdAt });
        for (const domainName of domains) {
          const notification = { ...base, id: this.newId(), domainName };
          byDomain.set(domainName, notification);
          notifications.push(notification);
          owners.push(w);
        }
        events.push({ byDomain, metric: p.alert.type, topicSource: p.keys.cooldown });
      });
      await after;
      // Each notification with the seen key of its record; never rejects.
      outcomes = await delivery.publishEach(
        notifications,
        owners.map((w) => won[w]!.keys.seen),
      );
    } catch (err) {
      // Not reached in practice (lookups and publishes answer errors); the records stay unsettled.
      for (const p of won) {
        failures.set(p.index, err);
        cooldown.forgetArmed(p.keys.cooldown);
      }
      return [];
    } finally {
      published();
    }
    const failedPublish = new Map<number, Error>();
    const elsewhere = new Set<number>();
    outcomes.forEach((outcome, i) => {
      if (outcome instanceof Error) failedPublish.set(owners[i] as number, outcome);
      else if (outcome === 'elsewhere') elsewhere.add(owners[i] as number);
    });

    const toPush: AlertFanOut[] = [];
    won.forEach((p, w) => {
      const publishError = failedPublish.get(w);
      const event = events[w];
      if (publishError !== undefined) {
        // Not published, or published with the answer lost. Not published, its seen mark stays pending
        // in Redis, so the record read again (here or on another replica) is answered `armed`; here it
        // must ask rather than be suppressed from memory. Published, it is answered `published-here`
        // here, and its pushes are sent then.
        failures.set(p.index, publishError);
        cooldown.forgetArmed(p.keys.cooldown);
        const owed: OwedDelivery =
          event === undefined
            ? { outcome: 'unroutable', notifications: 1, lookup: domainsByBuilding.get(p.alert.buildingId)?.failure }
            : { outcome: 'delivered', event, notifications: event.byDomain.size };
        rememberBounded(this.owedDeliveries, p.alert.alertId, owed, MAX_OWED_DELIVERIES);
        return;
      }
      if (elsewhere.has(w)) {
        // Another replica read the same record (a rebalance) and published it first: its pushes are
        // that replica's.
        p.outcome = 'suppressed';
        return;
      }
      if (event === undefined) {
        this.logUnroutable(p, where, domainsByBuilding.get(p.alert.buildingId)?.failure ?? 'no domains');
        p.outcome = 'unroutable';
        return;
      }
      p.outcome = 'delivered';
      toPush.push(event);
    });
    return toPush;
  }

  /** The error line of an alert published unscoped: its building's domains are unknown. */
  private logUnroutable(p: Pending, where: (index: number) => Partial<RecordPosition>, lookup: string): void {
    this.deps.logger.error(
      { ...where(p.index), buildingId: p.alert.buildingId, metric: p.alert.type, lookup },
      'alert unroutable: building domains unknown; published unscoped, no push',
    );
  }

  /**
   * One lookup per distinct building of the records, a bounded number at once (the directory caches
   * and coalesces across slices). A failed lookup is counted and gives no domains, with why.
   */
  private async routesOf(records: readonly Pending[]): Promise<Map<string, { domains: string[]; failure?: string }>> {
    const { directory, metrics, systemClaimsHeader } = this.deps;
    const buildings = [...new Set(records.map((p) => p.alert.buildingId))];
    const routes = new Map<string, { domains: string[]; failure?: string }>();
    await mapSettled(buildings, this.deps.lookupsInFlight ?? 64, async (buildingId) => {
      try {
        routes.set(buildingId, { domains: await directory.domainsOf(buildingId, systemClaimsHeader) });
      } catch (err) {
        metrics.directoryFailures.inc({ code: err instanceof DirectoryError ? err.code : 'unreachable' });
        routes.set(buildingId, { domains: [], failure: err instanceof DirectoryError ? err.code : describeError(err) });
      }
    });
    return routes;
  }
}
