/**
 * Registry's HTTP surface: open signup, and the provisioner's signed internal routes.
 */
import express, { type Express } from 'express';
import type { Logger } from 'pino';
import { DEFAULT_JSON_LIMIT, errorHandler, HttpError, jsonBody, jsonBodyText, notFoundHandler } from '../../shared/errors.js';
import type { KeyRing } from '../../shared/hmac.js';
import { signedBody, signedBodyText } from '../../shared/signed-body.js';
import { healthHandler } from '../../shared/http.js';
import type { OrganizationEvent, RegistryStore } from './model.js';
import { DEFAULT_PENDING_PAGE_SIZE, sendPendingList } from './pending-list.js';
import { organizationJson, parseSignup, parseStatusReport } from './wire.js';

export interface RegistryAppOptions {
  store: RegistryStore;
  /** INTERNAL_SIGNING_SECRET as a key ring (shared with the provisioner only). */
  keys: KeyRing;
  logger: Logger;
  /** Organizations read and written per step of the pending list; default {@link DEFAULT_PENDING_PAGE_SIZE}. */
  pendingPageSize?: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function createRegistryApp(options: RegistryAppOptions): Express {
  const { store } = options;
  const app = express();
  app.disable('x-powered-by');
  const signed = signedBody({ keys: options.keys });

  app.get('/health', healthHandler);

  // Open by design: no identity exists at signup. It validates and writes one row, and never waits
  // on provisioning, which polls the pending list on its own schedule.
  app.post('/organizations', jsonBody(DEFAULT_JSON_LIMIT, { keepText: true }), async (req, res) => {
    const signup = parseSignup(req.body ?? null, jsonBodyText(req));
    const created = await store.createOrganization(signup);
    if (!created.ok) throw new HttpError(409, `an organization named ${JSON.stringify(signup.name)} already exists`);
    res.status(201).json(organizationJson(created.value));
  });

  // Written a page at a time (see sendPendingList), after the signature check: the list is unbounded.
  const pendingPageSize = options.pendingPageSize ?? DEFAULT_PENDING_PAGE_SIZE;
  if (!Number.isSafeInteger(pendingPageSize) || pendingPageSize < 1) throw new RangeError(`pendingPageSize: expected a positive integer, got ${pendingPageSize}`);
  app.get('/internal/organizations/pending', ...signed, async (_req, res) => {
    await sendPendingList(res, store, pendingPageSize, options.logger);
  });

  const applyTo = async (id: string, event: OrganizationEvent) => {
    const applied = UUID.test(id) ? await store.applyEvent(id, event) : ({ ok: false, reason: 'not_found' } as const);
    if (applied.ok) return organizationJson(applied.value);
    if (applied.reason === 'not_found') throw new HttpError(404, `organization ${JSON.stringify(id.slice(0, 40))} not found`);
    const from = applied.current?.status ?? 'unknown';
    const to = event.kind === 'suspend' ? 'suspended' : event.outcome;
    throw new HttpError(409, `organization ${id} is ${from}; its status cannot become ${to}`);
  };

  app.post('/internal/organizations/:id/status', ...signed, async (req, res) => {
    // Validated before anything is read or written: a bad report changes nothing.
    const report = parseStatusReport(req.body, signedBodyText(req));
    res.json(await applyTo(String(req.params.id), { kind: 'provisioned', outcome: report.status, detail: report.detail }));
  });

  app.post('/internal/organizations/:id/suspend', ...signed, async (req, res) => {
    res.json(await applyTo(String(req.params.id), { kind: 'suspend' }));
  });

  app.use(notFoundHandler);
  app.use(errorHandler(options.logger));
  return app;
}
