/**
 * Express pieces every service shares: the claims guard, liveness, and the standard app frame.
 */
import type { Request, RequestHandler, Response } from 'express';
import { decodeClaims, type Claims } from './claims.js';
import { CLAIMS_HEADER } from './claims.js';
import { sendError } from './errors.js';

/** The decoded caller, as {@link requireClaims} leaves it on `res.locals`. */
export function callerOf(res: Response): Claims {
  const claims = res.locals.claims as Claims | undefined;
  if (!claims) throw new Error('callerOf used on a route without requireClaims');
  return claims;
}

/** The raw claims header of a request, for forwarding verbatim. */
export function rawClaimsOf(req: Request): string {
  return req.get(CLAIMS_HEADER) ?? '';
}

/**
 * Rejects a request whose claims header is missing or malformed with 401, and otherwise stores the
 * decoded claims on `res.locals.claims`.
 *
 * @example
 * app.use('/conversations', requireClaims(), conversationsRouter);
 */
export function requireClaims(options: { requireAccountName?: boolean } = {}): RequestHandler {
  return (req, res, next) => {
    const result = decodeClaims(req.get(CLAIMS_HEADER), options);
    if (!result.ok) {
      sendError(res, 401, `x-gateway-claims rejected: ${result.reason}`);
      return;
    }
    res.locals.claims = result.claims;
    next();
  };
}

/** GET /health: 200 while the HTTP server is up. */
export const healthHandler: RequestHandler = (_req, res) => {
  res.json({ status: 'ok' });
};
