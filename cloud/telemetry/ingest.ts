/**
 * Ingest, once the signature is verified and the body parsed (or, for a body in canonical form, read
 * from its bytes: domain/canonical-batch.ts): check the envelope, refuse the whole
 * batch if a reading is for a building its key may not write, answer a repeated batch id with its
 * first result, validate every reading, find breaches, store everything in one transaction, then
 * publish on Redis and nudge the alert relay without waiting for either.
 *
 * Publications waiting for Redis are capped by their bytes: each holds its batch's messages (a slice
 * of the request body), and a Redis that stays connected but stops answering would otherwise make
 * them pile up with the ingest volume. Past the cap a batch's publication is dropped: counted as a
 * failed publication and logged once per burst; the batch is still answered 200, its readings stored.
 */
import type { Logger } from 'pino';
import { metricOf } from '../../shared/catalog/metrics.js';
import type { Reading } from '../../shared/catalog/validate.js';
import { HttpError, describeError } from '../../shared/errors.js';
import type { Clock } from '../../shared/ttl-cache.js';
import { alertsOf, boundsResolver, type RaisedAlert, type ThresholdRow } from './domain/alerts.js';
import { DEFAULT_LIMITS, shapeOfBatch, validateBatch, type BatchLimits, type ReadingRow, type ValidReading } from './domain/batch.js';
import { scanCanonicalBatch } from './domain/canonical-batch.js';
import { encodeReading } from './domain/encoding.js';
import { outsideScopeAnswer, readingsOutside, type IngestKeyScope } from './domain/building-scope.js';
import { publishedBatch, selectedMessages, type PublishedBatch, type ReadingPublisher } from './broker/redis-publisher.js';
import type { TelemetryMetrics } from './metrics.js';
import type { ReadingsStore } from './store/readings.js';

export interface IngestServiceOptions {
  store: ReadingsStore;
  publisher: ReadingPublisher;
  /** Called after a batch with alerts committed (the relay's nudge). */
  onAlerts?: () => void;
  metrics: TelemetryMetrics;
  logger: Logger;
  clock: Clock;
  limits?: BatchLimits;
  /**
   * Bytes of messages whose publication may wait for Redis at once (default 32 MiB): a batch's
   * publication is started only while less than this waits, so at most one batch more is held.
   */
  maxPublishingBytes?: number;
}

/** Far above what a Redis that answers holds in flight (its replies come in a few milliseconds). */
const DEFAULT_MAX_PUBLISHING_BYTES = 32 * 1024 * 1024;

export interface IngestService {
  /**
   * Stores a parsed body signed with `key`. Throws HttpError 400/413 for a rejected batch, and 403 for
   * one holding a reading of a building the key may not write.
   */
  ingest(key: IngestKeyScope, body: unknown): Promise<{ accepted: number }>;
  /**
   * Stores the verified bytes of a body in canonical form (see domain/canonical-batch.ts) without
   * parsing them as JSON, as {@link ingest} would store them parsed. Undefined for any other body, and
   * for one with a reading outside the key's buildings: {@link ingest} answers those.
   */
  ingestCanonical(key: IngestKeyScope, raw: Buffer): Promise<{ accepted: number }> | undefined;
  /**
   * Waits for the batches still being stored, then for the Redis publications still in flight: with
   * the publisher's client (PUBLISHING_REDIS_OPTIONS) each ends, published or failed, within its
   * command timeout even when Redis stops answering.
   */
  drain(): Promise<void>;
}

/**
 * The readings of a scanned batch, as objects again: a row holds every declared field of its reading
 * (the columns, the value, and the rest as the payload's JSON text), so nothing is parsed but payloads.
 */
function validReadingsOf(rows: readonly ReadingRow[]): ValidReading[] {
  return rows.map((row) => {
    const metric = metricOf(row.metric);
    if (metric === undefined) throw new Error(`a scanned row names the unknown metric ${row.metric}`);
    const reading = { ...(JSON.parse(row.payload) as Record<string, string | number>), type: metric.key, buildingId: row.buildingId, roomId: row.roomId, timestamp: row.ts, [metric.value_field]: row.value };
    return { reading: reading as Reading, metric };
  });
}

/** A batch whose every reading is valid, ready to store and publish. */
interface ValidBatch {
  batchId: string | undefined;
  rows: ReadingRow[];
  boundedMetrics: string[];
  alertsFor(thresholds: ThresholdRow[]): RaisedAlert[];
  /** Every reading's message, in batch order. */
  published: PublishedBatch;
}

export function createIngestService(options: IngestServiceOptions): IngestService {
  const { store, publisher, metrics, logger } = options;
  const limits = options.limits ?? DEFAULT_LIMITS;
  const maxPublishingBytes = options.maxPublishingBytes ?? DEFAULT_MAX_PUBLISHING_BYTES;
  const inFlight = new Set<Promise<void>>();
  let publishingBytes = 0;
  /** Publications dropped since one last started: the first drop of a burst (from 0) is logged. */
  let droppedInBurst = 0;
  // Batches still being stored: one may commit during shutdown (the HTTP server gives up on its
  // request after a grace period), and its readings must still be published before Redis is closed.
  const storing = new Set<Promise<unknown>>();

  function publishLater(batch: PublishedBatch): void {
    if (publishingBytes >= maxPublishingBytes) {
      dropPublication(batch);
      return;
    }
    if (droppedInBurst > 0) {
      logger.info({ dropped: droppedInBurst }, 'publishing readings on Redis again; the batches dropped meanwhile are stored but were not published');
      droppedInBurst = 0;
    }
    const bytes = batch.json.length;
    publishingBytes += bytes;
    const publication = publisher
      .publish(batch)
      .catch((err) => {
        metrics.publishFailures.inc();
        logger.warn({ error: describeError(err), readings: batch.starts.length }, 'publishing readings on Redis failed; they are stored');
      })
      .finally(() => {
        publishingBytes -= bytes;
        inFlight.delete(publication);
      });
    inFlight.add(publication);
  }

  /** A publication past the cap: counted as failed, and logged for the first of a burst only. */
  function dropPublication(batch: PublishedBatch): void {
    metrics.publishFailures.inc();
    if (droppedInBurst === 0) {
      logger.warn(
        { publishingBytes, maxPublishingBytes, readings: batch.starts.length },
        'Redis is not answering the publications in flight; readings of new batches are stored but not published until it does',
      );
    }
    droppedInBurst += 1;
  }

  async function tracked(work: () => Promise<{ accepted: number }>): Promise<{ accepted: number }> {
    const done = metrics.ingestSeconds.startTimer();
    const batch = work();
    storing.add(batch);
    try {
      return await batch;
    } catch (err) {
      // Every refusal is an HttpError the batch counted already; anything else (PostgreSQL down, a
      // failed statement) is a 500 that must show on /metrics too.
      if (!(err instanceof HttpError)) metrics.batches.inc({ outcome: 'error' });
      throw err;
    } finally {
      storing.delete(batch);
      done();
    }
  }

  function ingest(key: IngestKeyScope, body: unknown): Promise<{ accepted: number }> {
    return tracked(() => ingestBatch(key, body));
  }

  function ingestCanonical(key: IngestKeyScope, raw: Buffer): Promise<{ accepted: number }> | undefined {
    const now = options.clock();
    const scanned = scanCanonicalBatch(raw, now, limits);
    if (scanned === undefined) return undefined;
    if (key.buildings !== 'any') {
      const allowed = key.buildings;
      if (scanned.rows.some((row) => !allowed.has(row.buildingId))) return undefined;
    }
    const { rows, messages, starts } = scanned;
    return tracked(() =>
      storeValid(key.keyId, {
        batchId: scanned.batchId,
        rows,
        boundedMetrics: scanned.boundedMetrics,
        // Only thresholds in force need the readings as objects: then they are made from the rows.
        alertsFor: (thresholds) => (thresholds.length === 0 ? [] : alertsOf(validReadingsOf(rows), boundsResolver(thresholds))),
        published: { buildingIds: rows.map((row) => row.buildingId), json: messages, starts },
      }),
    );
  }

  async function ingestBatch(key: IngestKeyScope, body: unknown): Promise<{ accepted: number }> {
    const { keyId } = key;
    const shape = shapeOfBatch(body, limits);
    if (!shape.ok) {
      metrics.batches.inc({ outcome: shape.status === 413 ? 'too_large' : 'invalid' });
      throw new HttpError(shape.status, shape.message, { errors: shape.errors });
    }
    // Before anything else reads the batch, even a repeated batch id's first result: a key confined to
    // some buildings writes nothing at all into another tenant's.
    const outside = readingsOutside(shape.readings, key.buildings);
    if (outside.length > 0) {
      metrics.batches.inc({ outcome: 'outside_buildings' });
      const answer = outsideScopeAnswer(keyId, shape.readings.length, outside);
      logger.warn({ keyId, refused: outside.length, readings: shape.readings.length, reason: answer.message }, 'ingest key wrote outside its buildings; batch refused');
      throw new HttpError(403, answer.message, { errors: answer.errors });
    }
    const checked = validateBatch(shape.readings, options.clock(), limits);
    if (!checked.ok) {
      // A repeat of an accepted batch answers its first result even if it no longer validates (say,
      // its readings aged past the retention while the gateway retried).
      const first = shape.batchId === undefined ? undefined : await store.batchResult(keyId, shape.batchId);
      if (first !== undefined) {
        metrics.batches.inc({ outcome: 'duplicate' });
        return { accepted: first };
      }
      metrics.batches.inc({ outcome: 'invalid' });
      throw new HttpError(400, checked.message, { errors: checked.errors });
    }
    const readings = checked.readings;
    const bounded = new Set<string>();
    // One serialisation per reading serves the COPY row and both Redis channels.
    const encoded = readings.map((valid) => {
      if (valid.metric.bounds.length > 0) bounded.add(valid.metric.key);
      return encodeReading(valid);
    });
    return storeValid(keyId, {
      batchId: shape.batchId,
      rows: encoded.map((e) => e.row),
      boundedMetrics: [...bounded],
      alertsFor: (thresholds) => alertsOf(readings, boundsResolver(thresholds)),
      published: publishedBatch(encoded),
    });
  }

  /** Stores a batch of valid readings, then publishes the ones it stored. */
  async function storeValid(keyId: string, batch: ValidBatch): Promise<{ accepted: number }> {
    const { rows } = batch;
    const outcome = await store.store({ keyId, batchId: batch.batchId, rows, boundedMetrics: batch.boundedMetrics, alertsFor: batch.alertsFor });
    if (outcome.kind === 'too_old') {
      // A repeat of an accepted batch answers its first result here too: a replica whose clock runs
      // ahead may have dropped its oldest day while this one still validated the readings.
      const first = batch.batchId === undefined ? undefined : await store.batchResult(keyId, batch.batchId);
      if (first !== undefined) {
        metrics.batches.inc({ outcome: 'duplicate' });
        return { accepted: first };
      }
      metrics.batches.inc({ outcome: 'invalid' });
      throw new HttpError(400, `${outcome.indexes.length} of ${rows.length} readings are older than the raw data still kept; nothing was stored`, {
        errors: outcome.indexes.slice(0, 100).map((index) => ({ index, field: 'timestamp', message: 'older than the raw data still kept' })),
      });
    }
    if (outcome.kind === 'duplicate') {
      metrics.batches.inc({ outcome: 'duplicate' });
      return { accepted: outcome.accepted };
    }
    metrics.batches.inc({ outcome: 'accepted' });
    metrics.readings.inc(outcome.inserted);
    if (outcome.alerts > 0) {
      metrics.alertsEnqueued.inc(outcome.alerts);
      options.onAlerts?.();
    }
    // A batch that repeated readings stored before publishes only the ones it stored: subscribers saw
    // the others when they were first accepted.
    const fresh = outcome.storedIndexes === undefined ? batch.published : selectedMessages(batch.published, outcome.storedIndexes);
    if (fresh.starts.length > 0) publishLater(fresh);
    return { accepted: outcome.accepted };
  }

  return {
    ingest,
    ingestCanonical,
    async drain() {
      await Promise.allSettled([...storing]);
      await Promise.all([...inFlight]);
    },
  };
}
