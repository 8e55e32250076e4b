/**
 * The HTTP surface, built from injected ports. Only /health, /metrics and /public-key are public;
 * every other route needs claims with an accountName, and the account always comes from them.
 */
import { randomUUID } from 'node:crypto';
import express, { type Express, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import { refuseCrossSiteWrites } from '../../shared/cross-site.js';
import { DirectoryError, type BuildingDirectory } from '../../shared/directory.js';
import { HttpError, errorHandler, jsonBody, notFoundHandler, reportedProblems, sendError } from '../../shared/errors.js';
import { callerOf, healthHandler, rawClaimsOf, requireClaims } from '../../shared/http.js';
import type { Notification } from '../../shared/notification.js';
import { metricsHandler } from '../../shared/prom.js';
import { systemClock, type Clock } from '../../shared/ttl-cache.js';
import { mayUseDomain, triggerAudience } from './audience.js';
import { ANY_ALERTABLE_METRIC, type Delivery } from './delivery.js';
import type { NotificationMetrics } from './metrics.js';
import { endpointOrigin } from './push.js';
import { parsePreferences, parseSubscribe, parseTrigger } from './requests.js';
import { WriteConflictError, type NotificationStore } from './store.js';

export interface AppDeps {
  store: NotificationStore;
  delivery: Delivery;
  /** Lookups for /trigger, made with the caller's claims. */
  directory: BuildingDirectory;
  metrics: NotificationMetrics;
  logger: Logger;
  /** The VAPID public key browsers subscribe with; absent when push is not configured. */
  vapidPublicKey?: string | undefined;
  /**
   * Accept plain-http push endpoints (local push services). Default false: https only. The push sender
   * checks every push again (its `allowHttp`): an endpoint stored while this was on stays stored.
   */
  allowHttpPushEndpoints?: boolean;
  /**
   * Accept push endpoints on private IP literals (local push services). Default false: /subscribe
   * refuses them with 400; the push sender refuses private destinations on its own.
   */
  allowPrivatePushDestinations?: boolean;
  clock?: Clock;
  newId?: () => string;
}

function validation(errors: string[]): HttpError {
  const reported = reportedProblems(errors);
  return new HttpError(400, reported.join('; '), { errors: reported });
}

function accountOf(res: Response): string {
  const account = callerOf(res).accountName;
  // requireClaims({ requireAccountName: true }) already refused claims without one.
  if (!account) throw new HttpError(401, 'x-gateway-claims rejected: accountName missing');
  return account;
}

function notMember(domainName: string): HttpError {
  return new HttpError(403, `not a member of domain ${JSON.stringify(domainName)}`);
}

/**
 * Builds the express app.
 *
 * @example
 * const app = createApp({ store, delivery, directory, metrics, logger, vapidPublicKey });
 * await listen(createServer(app), 3000);
 */
export function createApp(deps: AppDeps): Express {
  const { store, delivery, directory, metrics, logger } = deps;
  const clock = deps.clock ?? systemClock;
  const newId = deps.newId ?? randomUUID;
  const endpointPolicy = { allowHttp: deps.allowHttpPushEndpoints ?? false, allowPrivateDestinations: deps.allowPrivatePushDestinations ?? false };
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  app.get('/health', healthHandler);
  app.get('/metrics', metricsHandler(metrics.registry));
  app.get('/public-key', (_req, res) => {
    if (!deps.vapidPublicKey) {
      sendError(res, 404, 'push is not configured on this server: VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY are not set');
      return;
    }
    res.json({ publicVapidKey: deps.vapidPublicKey });
  });

  // Every route from here on acts for the user whose cookie the claims come from: a change another site
  // made the browser send is refused before the claims are read (shared/cross-site.ts).
  app.use(refuseCrossSiteWrites);
  const claims = requireClaims({ requireAccountName: true });

  app.post('/subscribe', claims, jsonBody(), async (req: Request, res: Response) => {
    const account = accountOf(res);
    const parsed = parseSubscribe(req.body, endpointPolicy);
    if (!parsed.ok) throw validation(parsed.errors);
    const { subscription, domainName, types } = parsed.value;
    if ((await store.saveDevice(account, subscription)) === 'held_by_another_account') {
      logger.warn({ account, pushService: endpointOrigin(subscription.endpoint) }, 'subscribe refused: the endpoint belongs to another account and the keys differ');
      throw new HttpError(
        409,
        'this push subscription is registered to another account; subscribe again from the browser that holds it (with its current keys), or create a new push subscription',
      );
    }
    if (domainName === undefined) {
      res.status(201).json({ subscription: { endpoint: subscription.endpoint }, preferences: null });
      return;
    }
    // The device stays registered even when the domain is refused.
    if (!mayUseDomain(callerOf(res), domainName)) throw notMember(domainName);
    const record = await store.setPreferences(
      account,
      domainName,
      types.map((notificationType) => ({ notificationType, isSubscribed: true })),
    );
    res.status(201).json({ subscription: { endpoint: subscription.endpoint }, preferences: record });
  });

  // GET /preferences/{accountName}. The path parameter is ignored: a caller only ever reads their own
  // records. A pattern without a capture group, so nothing of the path is decoded: Express decodes a
  // named parameter while matching, and `ana%zz` answered 400 before the claims were even read. Case
  // and a trailing slash are loose, as for the other routes.
  app.get(/^\/preferences\/[^/]+\/?$/i, claims, async (_req: Request, res: Response) => {
    res.json(await store.preferencesOf(accountOf(res)));
  });

  app.post('/preferences', claims, jsonBody(), async (req: Request, res: Response) => {
    const account = accountOf(res);
    const parsed = parsePreferences(req.body);
    if (!parsed.ok) throw validation(parsed.errors);
    const { domainName, changes } = parsed.value;
    if (!mayUseDomain(callerOf(res), domainName)) throw notMember(domainName);
    res.json(await store.setPreferences(account, domainName, changes));
  });

  app.post('/trigger', claims, jsonBody(), async (req: Request, res: Response) => {
    const caller = callerOf(res);
    const parsed = parseTrigger(req.body);
    if (!parsed.ok) throw validation(parsed.errors);
    const { buildingId, severity, title, message } = parsed.value;
    let buildingDomains: string[];
    try {
      buildingDomains = await directory.domainsOf(buildingId, rawClaimsOf(req));
    } catch (err) {
      const code = err instanceof DirectoryError ? err.code : 'unreachable';
      metrics.directoryFailures.inc({ code });
      logger.error({ buildingId, lookup: code }, 'trigger failed: building lookup failed');
      throw new HttpError(500, 'building lookup failed');
    }
    const audience = triggerAudience(caller, buildingDomains);
    if (audience.kind === 'forbidden') throw new HttpError(403, `none of building ${JSON.stringify(buildingId)}'s domains is yours`);
    if (audience.kind === 'no_domains') throw new HttpError(404, 'building has no domains');
    const createdAt = new Date(clock()).toISOString();
    const base: Notification = { id: '', kind: 'manual', severity, title, message, buildingId, createdAt };
    if (audience.kind === 'unscoped') {
      const inApp = await delivery.publish([{ ...base, id: newId() }]);
      logger.info({ buildingId, account: caller.accountName, sub: caller.sub }, 'manual alert published unscoped');
      res.json({ domains: [], inApp, push: 0 });
      return;
    }
    const byDomain = new Map<string, Notification>(audience.domains.map((domainName) => [domainName, { ...base, id: newId(), domainName }]));
    const report = await delivery.toDomains(byDomain, ANY_ALERTABLE_METRIC, { waitForPushes: true });
    logger.info({ buildingId, domains: audience.domains, account: caller.accountName, push: report.push }, 'manual alert delivered');
    res.json({ domains: audience.domains, inApp: report.inApp, push: report.push });
  });

  app.use(notFoundHandler);
  const handle = errorHandler(logger);
  app.use((err: unknown, req: Request, res: Response, next: express.NextFunction) => {
    if (err instanceof WriteConflictError) {
      sendError(res, 409, 'preferences changed concurrently; try again');
      return;
    }
    handle(err, req, res, next);
  });
  return app;
}
