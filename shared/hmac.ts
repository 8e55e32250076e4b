/**
 * Request signatures: `X-Signature` is the lowercase hex HMAC-SHA256 of the exact raw body bytes (empty
 * bytes when there is no body), compared in constant time against a key ring so secrets rotate without
 * downtime. The Express middleware that applies this to requests is in `signed-body.ts`, so code that
 * only signs (the edge) carries no web framework.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-signature';
export const KEY_ID_HEADER = 'x-key-id';

/**
 * What `X-Key-Id` may carry: 1 to 128 of letters, digits, `.`, `_`, `:` and `-`. Telemetry issues and
 * looks up per-gateway keys by it; the edge's config accepts the same ids.
 */
export const KEY_ID = /^[A-Za-z0-9._:-]{1,128}$/;

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
