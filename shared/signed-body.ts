/**
 * Express middleware for signed requests: reads the raw body, verifies `X-Signature` over those exact
 * bytes with {@link verify}, and only then parses JSON.
 */
import type { Request, RequestHandler } from 'express';
import express from 'express';
import { invalidUtf8Error, sendText } from './errors.js';
import { SIGNATURE_HEADER, verify, type KeyRing } from './hmac.js';

/** Where the raw body is kept on a request that passed through {@link signedBody}. */
export interface SignedRequest extends Request {
  rawBody?: Buffer;
}

export interface SignedBodyOptions {
  /** The key ring, or a function choosing one per request (e.g. by X-Key-Id); undefined rejects. */
  keys: KeyRing | ((req: Request) => KeyRing | undefined);
  /** Body size limit; larger bodies reach the error handler as 413. Default 1 MiB. */
  limit?: string | number;
  /** Parse the verified bytes as JSON into req.body (malformed JSON is a 400). Default true. */
  parseJson?: boolean;
}

/**
 * A route that parsed its body before {@link signedBody} saw it. A wiring mistake, not bad input: the
 * error handler answers 500 and logs this error's name.
 */
export class SignedBodyOrderError extends Error {
  constructor() {
    super('signedBody must come before any other body parser on the route');
    this.name = 'SignedBodyOrderError';
  }
}

/** True when the request announces a body (as body-parser decides), whether or not it was read yet. */
function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || req.headers['content-length'] !== undefined;
}

/**
 * Express middleware: reads the raw body (any content type, no Content-Encoding), verifies `X-Signature`
 * over those exact bytes, answers 403 text/plain `invalid signature` on a mismatch, and only then parses JSON. Mount it
 * before any other body parser: a body already read elsewhere is refused with {@link SignedBodyOrderError}.
 *
 * @example
 * router.post('/internal/domains', ...signedBody({ keys: [secret] }), handler);
 */
export function signedBody(options: SignedBodyOptions): RequestHandler[] {
  // No inflation: the signature is over the bytes received, and a gzip body's inflated bytes are not
  // those. A compressed signed body is refused (400 `unsupported body encoding`) before verification.
  const raw = express.raw({ type: () => true, limit: options.limit ?? '1mb', inflate: false });
  const check: RequestHandler = (req, res, next) => {
    if (!Buffer.isBuffer(req.body) && hasBody(req)) {
      // Another parser read the body first: verifying empty bytes would accept a GET's signature.
      next(new SignedBodyOrderError());
      return;
    }
    const body: Buffer = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    (req as SignedRequest).rawBody = body;
    const keys = typeof options.keys === 'function' ? options.keys(req) : options.keys;
    if (!keys || !verify(body, req.get(SIGNATURE_HEADER), keys)) {
      sendText(res, 403, 'invalid signature');
      return;
    }
    if (options.parseJson === false) {
      next();
      return;
    }
    if (body.length === 0) {
      req.body = undefined;
      next();
      return;
    }
    const invalid = invalidUtf8Error(body);
    if (invalid) {
      next(invalid);
      return;
    }
    try {
      req.body = JSON.parse(body.toString('utf8'));
    } catch {
      next(Object.assign(new Error('malformed JSON'), { type: 'entity.parse.failed', status: 400 }));
      return;
    }
    next();
  };
  return [raw, check];
}

/**
 * The text of a body `signedBody()` verified and parsed; undefined when it was empty (and so not
 * parsed). JSON.parse keeps only the last of a key given twice: the text is where a check finds one.
 */
export function signedBodyText(req: Request): string | undefined {
  const raw = (req as SignedRequest).rawBody;
  return raw === undefined || raw.length === 0 ? undefined : raw.toString('utf8');
}
