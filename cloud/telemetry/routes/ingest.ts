/**
 * POST /ingest and /telemetry/ingest: choose the key ring by X-Key-Id, verify X-Signature over the
 * exact bytes (at most 5 MiB) before parsing anything, then hand the parsed body and the key's
 * buildings to the ingest service. A body that is not JSON answers the ingest 400 shape of
 * CONTRACTS.md, `errors` included. A 403 before the service is a bad signature (text/plain); the
 * service's own 403 (readings outside the key's buildings) is JSON and counted by the service.
 */
import { Router, type ErrorRequestHandler, type Request, type RequestHandler, type Response } from 'express';
import { errorAnswerOf, HttpError, invalidUtf8Error } from '../../../shared/errors.js';
import { KEY_ID_HEADER } from '../../../shared/hmac.js';
import { signedBody, type SignedRequest } from '../../../shared/signed-body.js';
import type { IngestService } from '../ingest.js';
import type { TelemetryMetrics } from '../metrics.js';
import type { ChosenKey, SigningKeys } from '../signing-keys.js';

export const INGEST_PATHS = ['/ingest', '/telemetry/ingest'];
export const INGEST_LIMIT_BYTES = 5 * 1024 * 1024;

export function ingestRouter(deps: { ingest: IngestService; keys: SigningKeys; metrics: TelemetryMetrics; limitBytes?: number }): Router {
  const chosen = new WeakMap<Request, ChosenKey>();

  // A batch is counted once: by the ingest service once `handle` marks it counted, else here by its
  // answer. A 500 before the service (the X-Key-Id lookup with PostgreSQL down) is an error batch too.
  const chooseKey: RequestHandler = async (req, res, next) => {
    res.on('finish', () => {
      if (res.locals.counted) return;
      if (res.statusCode === 403) deps.metrics.batches.inc({ outcome: 'bad_signature' });
      else if (res.statusCode === 413) deps.metrics.batches.inc({ outcome: 'too_large' });
      else if (res.statusCode >= 500) deps.metrics.batches.inc({ outcome: 'error' });
    });
    const key = await deps.keys.choose(req.get(KEY_ID_HEADER));
    if (key) chosen.set(req, key);
    next();
  };

  const handle: RequestHandler = async (req, res) => {
    const key = chosen.get(req);
    if (!key) throw new Error('ingest reached without a verified key');
    res.locals.counted = true;
    const raw = (req as SignedRequest).rawBody;
    // A body in canonical form is stored from its bytes; any other is parsed and takes the general path.
    const canonical = raw === undefined ? undefined : deps.ingest.ingestCanonical(key, raw);
    sendAccepted(res, await (canonical ?? deps.ingest.ingest(key, parsedBody(req as SignedRequest, deps.metrics))));
  };

  // The body reader's own 400s (a compressed body, one cut short) in the ingest 400 shape, `errors`
  // included, counted as invalid batches like a body that is not JSON.
  const bodyRefused: ErrorRequestHandler = (err, _req, _res, next) => {
    const answer = err instanceof HttpError ? undefined : errorAnswerOf(err);
    if (answer?.status !== 400) {
      next(err);
      return;
    }
    next(invalidBody(deps.metrics, answer.message, answer.message));
  };

  const router = Router();
  router.post(INGEST_PATHS, chooseKey, ...signedBody({ keys: (req) => chosen.get(req)?.ring, limit: deps.limitBytes ?? INGEST_LIMIT_BYTES, parseJson: false }), handle);
  router.use(INGEST_PATHS, bodyRefused);
  return router;
}

/**
 * The 200 answer `{accepted}` as JSON, written as res.json writes it but without the ETag: Express
 * hashes every body for one, and nothing revalidates the answer to a POST.
 */
function sendAccepted(res: Response, result: { accepted: number }): void {
  const body = JSON.stringify(result);
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/**
 * The verified bytes as JSON; not UTF-8 or not JSON is a 400 naming the body, counted as an invalid
 * batch. Bytes that are not UTF-8 are refused, not decoded leniently: two ids differing only in bad
 * bytes would both become U+FFFD and be stored as one.
 */
function parsedBody(req: SignedRequest, metrics: TelemetryMetrics): unknown {
  const raw = req.rawBody ?? Buffer.alloc(0);
  if (invalidUtf8Error(raw)) throw invalidBody(metrics, 'request body is not valid UTF-8', 'not valid UTF-8');
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw invalidBody(metrics, 'request body is not valid JSON', raw.length === 0 ? 'empty body' : 'not valid JSON');
  }
}

/** A body refused as a whole: counted as an invalid batch, and the ingest 400 naming `(body)`. */
function invalidBody(metrics: TelemetryMetrics, message: string, detail: string): HttpError {
  metrics.batches.inc({ outcome: 'invalid' });
  return new HttpError(400, message, { errors: [{ index: null, field: '(body)', message: detail }] });
}
