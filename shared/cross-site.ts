/**
 * Refuses state-changing requests another site made a browser send.
 *
 * The mesh builds `x-gateway-claims` from the browser's `authentication_token` cookie, so any request the
 * browser sends carries the user's identity, including a plain `<form method=POST>` on another site:
 * such a form needs no CORS preflight and its answer need not be readable for the change to happen (a
 * tenancy join, a chat conversation). Browsers mark where a request comes from in headers a page cannot
 * set: `Sec-Fetch-Site`, and `Origin`, which is `null` for a sandboxed or opaque origin. Only those two
 * marks are read; a request without them (curl, a service, an older browser on the same site) passes,
 * and so do `same-origin`, `same-site` and `none` (the user's own navigation).
 */
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { sendError } from './errors.js';

/** Methods that change nothing, so a cross-site request with them gains an attacker nothing. */
const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Header values are compared trimmed and lower-cased: browsers send them so, and a variant must not pass. */
const normalized = (value: string | string[] | undefined): string | undefined =>
  value === undefined ? undefined : (Array.isArray(value) ? value.join(',') : value).trim().toLowerCase();

/**
 * Why a request must be refused as cross-site, or undefined when it may go on. Reads two headers and the
 * method, nothing else: cheap enough for a hot path.
 *
 * @example
 * crossSiteRefusal({ method: 'POST', headers: { 'sec-fetch-site': 'cross-site' } });
 * // 'cross-site request refused: Sec-Fetch-Site is cross-site; …'
 * crossSiteRefusal({ method: 'POST', headers: { 'sec-fetch-site': 'same-origin' } }); // undefined
 * crossSiteRefusal({ method: 'GET', headers: { origin: 'null' } }); // undefined
 */
export function crossSiteRefusal(req: Pick<IncomingMessage, 'method' | 'headers'>): string | undefined {
  if (SAFE_METHODS.has(req.method ?? 'GET')) return undefined;
  if (normalized(req.headers['sec-fetch-site']) === 'cross-site') return refusal('Sec-Fetch-Site is cross-site');
  if (normalized(req.headers.origin) === 'null') return refusal('Origin is null');
  return undefined;
}

function refusal(mark: string): string {
  return `cross-site request refused: ${mark}; a request that changes state with the user's cookie must come from the app's own site`;
}

/**
 * Answers 403 (`Forbidden`) to a state-changing request another site made a browser send, before claims
 * or body are read; lets everything else through. Mount it beside the claims guard of every end-user
 * route; the signed routes (`/internal/*`, telemetry ingest) carry no cookie and do without it.
 *
 * @example
 * app.use(['/domains', '/me'], refuseCrossSiteWrites, requireClaims(), jsonBody());
 */
export const refuseCrossSiteWrites: RequestHandler = (req, res, next) => {
  const refused = crossSiteRefusal(req);
  if (refused === undefined) next();
  else sendError(res, 403, refused);
};
