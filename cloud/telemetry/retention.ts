/**
 * The retention job: every `intervalMs`, roll closed hours up and drop raw day partitions older than
 * the retention whose hours are all rolled up. "Now" comes from the injected clock. A stop calls off
 * a run under way (it changes nothing; the next start does its work) rather than waiting for it.
 */
import type { Logger } from 'pino';
import { COUNT_METRICS } from '../../shared/catalog/metrics.js';
import { describeError } from '../../shared/errors.js';
import type { Clock } from '../../shared/ttl-cache.js';
import { DEFAULT_LIMITS } from './domain/batch.js';
import { DAY_MS } from './domain/utc.js';
import type { TelemetryMetrics } from './metrics.js';
import { RetentionCancelled, type RetentionPolicy, type RetentionReport } from './store/retention.js';

export interface RetentionJobOptions {
  store: { run(policy: RetentionPolicy, signal?: AbortSignal): Promise<RetentionReport> };
  /** Told about each dropped partition (the ingest store forgets it). */
  onDropped?: (partition: string) => void;
  clock: Clock;
  privacyFloor: number;
  retentionMs?: number;
  intervalMs?: number;
  logger: Logger;
  metrics?: TelemetryMetrics;
}

export class RetentionJob {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = true;
  /** Calls off the run under way. */
  private abort = new AbortController();

  constructor(private readonly options: RetentionJobOptions) {}

  async start(): Promise<void> {
    this.stopped = false;
    this.abort = new AbortController();
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.abort.abort();
    await this.running?.catch(() => undefined);
  }

  /** One run at the clock's now. Rejects with RetentionCancelled when a stop calls it off. */
  async runOnce(): Promise<RetentionReport> {
    const retentionMs = this.options.retentionMs ?? 14 * DAY_MS;
    const report = await this.options.store.run({
      now: this.options.clock(),
      retentionMs,
      privacyFloor: this.options.privacyFloor,
      countMetrics: COUNT_METRICS,
      // A relayed alert or a batch id is needed while a reading it covers may still be accepted: for
      // the raw retention after the reading's timestamp, which may lie ahead of its arrival.
      bookkeepingMs: retentionMs + DEFAULT_LIMITS.maxFutureMs,
    }, this.abort.signal);
    for (const name of report.dropped) this.options.onDropped?.(name);
    this.options.metrics?.partitionsDropped.inc(report.dropped.length);
    return report;
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => {
      this.running = this.runOnce()
        .then(
          (report) => {
            this.options.metrics?.retentionRuns.inc({ outcome: 'ok' });
            if (report.dropped.length > 0 || report.lateHours > 0) this.options.logger.info(report, 'rollup and retention ran');
          },
          (err) => {
            if (err instanceof RetentionCancelled) {
              this.options.logger.info('rollup and retention called off by the stop; the next start runs it');
              return;
            }
            this.options.metrics?.retentionRuns.inc({ outcome: 'failed' });
            this.options.logger.error({ error: describeError(err) }, 'rollup and retention failed; will retry');
          },
        )
        .finally(() => {
          this.running = undefined;
          if (!this.stopped) this.schedule(this.options.intervalMs ?? 5 * 60_000);
        });
    }, ms);
  }
}
