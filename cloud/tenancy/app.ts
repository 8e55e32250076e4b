/**
 * Tenancy's HTTP surface, built from injected ports so tests drive it without main.ts.
 */
import express, { type Express } from 'express';
import type { Logger } from 'pino';
import { errorHandler, jsonBody, notFoundHandler } from '../../shared/errors.js';
import type { KeyRing } from '../../shared/hmac.js';
import { healthHandler, requireClaims } from '../../shared/http.js';
import type { TenancyStore } from './model.js';
import { domainRoutes } from './routes/domains.js';
import { internalRoutes } from './routes/internal.js';
import { inviteCodeRoutes } from './routes/invite-codes.js';
import { memberRoutes } from './routes/members.js';

export interface TenancyAppOptions {
  store: TenancyStore;
  /** INTERNAL_SIGNING_SECRET as a key ring: current secret first, then those still accepted. */
  keys: KeyRing;
  logger: Logger;
  clock?: () => Date;
}

export function createTenancyApp(options: TenancyAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.get('/health', healthHandler);
  // Internal routes read their raw body themselves (the signature covers the exact bytes), so they
  // are mounted before the JSON parser.
  app.use(internalRoutes(options.store, options.keys));
  app.use(jsonBody());
  const endUser = requireClaims();
  app.use(['/domains', '/me', '/invite-codes'], endUser);
  app.use(domainRoutes(options.store));
  app.use(memberRoutes(options.store));
  app.use(inviteCodeRoutes(options.store, options.clock ?? (() => new Date())));
  app.use(notFoundHandler);
  app.use(errorHandler(options.logger));
  return app;
}
