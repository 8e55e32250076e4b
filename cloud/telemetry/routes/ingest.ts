/**
 * POST /ingest and /telemetry/ingest: choose the key ring by X-Key-Id, verify X-Signature over the
 * exact bytes (at most 5 MiB) before parsing anything, then hand the parsed body to the ingest service.
 */
import { Router, type Request, type RequestHandler } from 'express';
import { KEY_ID_HEADER } from '../../../shared/hmac.js';
import { signedBody } from '../../../shared/signed-body.js';
import type { IngestService } from '../ingest.js';
import type { TelemetryMetrics } from '../metrics.js';
import type { ChosenKey, SigningKeys } from '../signing-keys.js';

export const INGEST_PATHS = ['/ingest', '/telemetry/ingest'];
export const INGEST_LIMIT_BYTES = 5 * 1024 * 1024;

export function ingestRouter(deps: { ingest: IngestService; keys: SigningKeys; metrics: TelemetryMetrics; limitBytes?: number }): Router {
  const chosen = new WeakMap<Request, ChosenKey>();

  const chooseKey: RequestHandler = async (req, res, next) => {
    res.on('finish', () => {
      if (res.statusCode === 403) deps.metrics.batches.inc({ outcome: 'bad_signature' });
      else if (res.statusCode === 413 && !res.locals.counted) deps.metrics.batches.inc({ outcome: 'too_large' });
    });
    const key = await deps.keys.choose(req.get(KEY_ID_HEADER));
    if (key) chosen.set(req, key);
    next();
  };

  const handle: RequestHandler = async (req, res) => {
    const key = chosen.get(req);
    if (!key) throw new Error('ingest reached without a verified key');
    res.locals.counted = true;
    res.json(await deps.ingest.ingest(key.keyId, req.body));
  };

  const router = Router();
  router.post(INGEST_PATHS, chooseKey, ...signedBody({ keys: (req) => chosen.get(req)?.ring, limit: deps.limitBytes ?? INGEST_LIMIT_BYTES }), handle);
  return router;
}
