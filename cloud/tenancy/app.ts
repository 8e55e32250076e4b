/**
 * Tenancy's HTTP surface, built from injected ports so tests drive it without main.ts.
 */
import type { RequestListener } from 'node:http';
import express from 'express';
import type { Logger } from 'pino';
import { refuseCrossSiteWrites } from '../../shared/cross-site.js';
import { errorHandler, jsonBody, notFoundHandler } from '../../shared/errors.js';
import type { KeyRing } from '../../shared/hmac.js';
import { healthHandler, requireClaims } from '../../shared/http.js';
import type { TenancyStore } from './model.js';
import { domainRoutes } from './routes/domains.js';
import { internalRoutes } from './routes/internal.js';
import { inviteCodeRoutes } from './routes/invite-codes.js';
import { isLoginPath, loginPathHandler } from './routes/login-path.js';
import { memberRoutes } from './routes/members.js';

export interface TenancyAppOptions {
  store: TenancyStore;
  /** INTERNAL_SIGNING_SECRET as a key ring: current secret first, then those still accepted. */
  keys: KeyRing;
  logger: Logger;
}

/** The request listener for `http.createServer`: the login path in front, Express for the rest. */
export function createTenancyApp(options: TenancyAppOptions): RequestListener {
  const app = express();
  app.disable('x-powered-by');
  // Weak ETags hash every response body; no client of these JSON routes revalidates, so skip the cost.
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.get('/health', healthHandler);
  // Internal routes read their raw body themselves (the signature covers the exact bytes), so they
  // are mounted before the JSON parser.
  app.use(internalRoutes(options.store, options.keys));
  // A change another site made the browser send is refused before anything of it is read (claims
  // come from the cookie, shared/cross-site.ts). Then claims: a caller who is nobody gets 401, never
  // has a body read, and is told nothing about it.
  app.use(['/domains', '/me', '/invite-codes'], refuseCrossSiteWrites, requireClaims(), jsonBody());
  app.use(domainRoutes(options.store, options.logger));
  app.use(memberRoutes(options.store));
  app.use(inviteCodeRoutes(options.store));
  app.use(notFoundHandler);
  app.use(errorHandler(options.logger));
  const loginPath = loginPathHandler(options.store, options.keys, options.logger);
  return (req, res) => {
    if (isLoginPath(req)) loginPath(req, res);
    else app(req, res);
  };
}
