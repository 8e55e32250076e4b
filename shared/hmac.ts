/**
 * Request signatures: `X-Signature` is the lowercase hex HMAC-SHA256 of the exact raw body bytes (empty
 * bytes when there is no body), compared in constant time against a key ring so secrets rotate without
 * downtime.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import express from 'express';
import { sendText } from './errors.js';

export const SIGNATURE_HEADER = 'x-signature';
export const KEY_ID_HEADER = 'x-key-id';

/** One secret, or the current secret followed by the ones still accepted while callers rotate. */
export type KeyRing = string | readonly string[];

const HEX_SHA256 = /^[0-9a-f]{64}$/;

/**
 * The lowercase hex HMAC-SHA256 of `body` under `secret`.
 *
 * @example
 * sign('{"a":1}', 's3cret'); // '…64 lowercase hex characters…'
 * sign(Buffer.alloc(0), 's3cret'); // the signature of a GET
 */
export function sign(body: string | Uint8Array, secret: string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/**
 * True when `signature` is the signature of `body` under any key of the ring. A signature of the wrong
 * length, wrong case, or not hex is simply false. Never throws.
 *
 * @example
 * verify(body, req.get('x-signature'), [currentSecret, previousSecret]);
 */
export function verify(body: string | Uint8Array, signature: unknown, keys: KeyRing): boolean {
  if (typeof signature !== 'string' || !HEX_SHA256.test(signature)) return false;
  const given = Buffer.from(signature, 'hex');
  let match = false;
  for (const key of typeof keys === 'string' ? [keys] : keys) {
    if (!key) continue;
    const expected = createHmac('sha256', key).update(body).digest();
    // Every key is compared, match or not, so timing says nothing about which key matched.
    if (timingSafeEqual(expected, given)) match = true;
  }
  return match;
}

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
 * Express middleware: reads the raw body (any content type), verifies `X-Signature` over those exact
 * bytes, answers 403 text/plain `invalid signature` on a mismatch, and only then parses JSON.
 *
 * @example
 * router.post('/internal/domains', ...signedBody({ keys: [secret] }), handler);
 */
export function signedBody(options: SignedBodyOptions): RequestHandler[] {
  const raw = express.raw({ type: () => true, limit: options.limit ?? '1mb' });
  const check: RequestHandler = (req, res, next) => {
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
 * Parses a key ring from an environment value: secrets separated by commas, current first.
 *
 * @example
 * keyRingFromEnv('new-secret,old-secret'); // ['new-secret', 'old-secret']
 */
export function keyRingFromEnv(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}
