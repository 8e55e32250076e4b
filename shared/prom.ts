/**
 * Metrics: one prom-client registry per service, with the process defaults, and a `/metrics` handler.
 */
import type { RequestHandler } from 'express';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export { Counter, Gauge, Histogram, Registry };

/**
 * A fresh registry for one service, labelled `service=<name>`, with Node's default metrics.
 *
 * @example
 * const registry = createRegistry('relay');
 * const relayed = new Counter({ name: 'telemetry_relayed_total', help: '…', registers: [registry] });
 */
export function createRegistry(service: string, options: { defaults?: boolean } = {}): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  if (options.defaults !== false) collectDefaultMetrics({ register: registry });
  return registry;
}

/** GET /metrics in the Prometheus text exposition format. */
export function metricsHandler(registry: Registry): RequestHandler {
  return async (_req, res, next) => {
    try {
      const body = await registry.metrics();
      res.set('content-type', registry.contentType).send(body);
    } catch (err) {
      next(err);
    }
  };
}

/**
 * Makes every labelled series of a counter exist at 0 from startup, so dashboards and alerts see them
 * before the first event.
 *
 * @example
 * zeroLabels(rejected, 'reason', ['forbidden', 'lookup_failed']);
 */
export function zeroLabels<T extends string>(metric: Counter<T> | Gauge<T>, label: T, values: readonly string[]): void {
  for (const value of values) metric.inc({ [label]: value } as Partial<Record<T, string>>, 0);
}
