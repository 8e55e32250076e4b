/**
 * The HTTP surface of the telemetry service, built from injected ports so tests drive it without main.
 */
import express, { type Express } from 'express';
import type { Logger } from 'pino';
import { METRICS } from '../../shared/catalog/metrics.js';
import { contractOf } from '../../shared/catalog/validate.js';
import { refuseCrossSiteWrites } from '../../shared/cross-site.js';
import type { BindingCatalog } from '../../shared/devices/bindings.js';
import type { DeviceAdapter } from '../../shared/devices/adapter.js';
import type { BuildingDirectory } from '../../shared/directory.js';
import { errorHandler, notFoundHandler } from '../../shared/errors.js';
import { healthHandler } from '../../shared/http.js';
import { metricsHandler } from '../../shared/prom.js';
import type { IngestService } from './ingest.js';
import type { TelemetryMetrics } from './metrics.js';
import { actionsRouter } from './routes/actions.js';
import { ingestRouter } from './routes/ingest.js';
import { sensorsRouter } from './routes/sensors.js';
import { thresholdsRouter } from './routes/thresholds.js';
import type { SigningKeys } from './signing-keys.js';
import type { BuildingStore } from './store/buildings.js';
import type { ThresholdStore } from './store/thresholds.js';

export interface AppPorts {
  ingest: IngestService;
  keys: SigningKeys;
  thresholds: ThresholdStore;
  buildings: Pick<BuildingStore, 'sensorsIn'>;
  directory: BuildingDirectory;
  devices: DeviceAdapter;
  catalog: BindingCatalog;
  metrics: TelemetryMetrics;
  logger: Logger;
  /** Ingest body limit in bytes. Default 5 MiB. */
  ingestLimitBytes?: number;
}

export function createApp(ports: AppPorts): Express {
  const app = express();
  app.disable('x-powered-by');
  app.get('/health', healthHandler);
  app.get('/metrics', metricsHandler(ports.metrics.registry));
  app.get('/contracts', (_req, res) => {
    res.json(Object.values(METRICS).map(contractOf));
  });
  const limitBytes = ports.ingestLimitBytes;
  app.use(ingestRouter({ ingest: ports.ingest, keys: ports.keys, metrics: ports.metrics, ...(limitBytes !== undefined ? { limitBytes } : {}) }));
  // Ingest above is signed and carries no cookie. Every route below acts with claims the mesh builds
  // from the user's cookie: a change another site made the browser send is refused (shared/cross-site.ts).
  app.use(refuseCrossSiteWrites);
  app.use(thresholdsRouter({ directory: ports.directory, store: ports.thresholds }));
  app.use(sensorsRouter({ directory: ports.directory, store: ports.buildings, catalog: ports.catalog }));
  app.use(actionsRouter({ directory: ports.directory, devices: ports.devices, metrics: ports.metrics, logger: ports.logger }));
  app.use(notFoundHandler);
  app.use(errorHandler(ports.logger));
  return app;
}
