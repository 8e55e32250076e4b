/**
 * Domains as end users see them: the public listing, creation, and subdomains (private ones only to
 * the parent's members and platform administrators). Creating a subdomain needs the right to manage
 * the parent twice: in the caller's token, then in her memberships as stored, since a token outlives a
 * removal.
 */
import { Router } from 'express';
import { HttpError } from '../../../shared/errors.js';
import { callerOf } from '../../../shared/http.js';
import { canManageDomain } from '../../../shared/roles.js';
import type { TenancyStore } from '../model.js';
import { accountIdOf, maySeePrivateSubdomains } from '../policy.js';
import { CreateDomainBody, deletedAccountError, domainJson, isDomainName, listedDomainJson, parseBody } from '../wire.js';
import { linkNextPage, pageOf } from './paging.js';
import { refused } from './refusals.js';

export function domainRoutes(store: TenancyStore): Router {
  const router = Router();

  router.get('/domains', async (req, res) => {
    const page = pageOf(req);
    const domains = await store.listPublicDomains(page);
    linkNextPage(req, res, page, domains.map((d) => d.name));
    res.json(domains.map(listedDomainJson));
  });

  router.post('/domains', async (req, res) => {
    const creator = accountIdOf(callerOf(res));
    if (creator === undefined) throw new HttpError(403, 'only an account may create a domain');
    const body = parseBody(CreateDomainBody, 'CreateDomainBody', req.body);
    const created = await store.createDomain(
      { name: body.name, displayName: body.displayName, joinPolicy: body.joinPolicy ?? 'invite-only', isPublic: body.isPublic ?? false },
      creator,
    );
    if (!created.ok && created.reason === 'account_deleted') throw deletedAccountError(creator, 403);
    if (!created.ok) throw new HttpError(409, `domain name ${JSON.stringify(body.name)} is already taken`);
    res.status(201).json(domainJson(created.value));
  });

  /**
   * A private parent is not hidden from a non-member (it answers 200, with its public children): other
   * routes tell a private domain's existence too (join answers 403, creating its name 409).
   */
  router.get('/domains/:domain/subdomains', async (req, res) => {
    const parent = req.params.domain;
    const page = pageOf(req);
    const visible = maySeePrivateSubdomains(callerOf(res).memberships, parent) ? 'all' : 'public';
    const children = isDomainName(parent) ? await store.listSubdomains(parent, page, visible) : undefined;
    if (!children) throw new HttpError(404, `domain ${JSON.stringify(parent)} not found`);
    linkNextPage(req, res, page, children.map((d) => d.name));
    res.json(children.map(listedDomainJson));
  });

  router.post('/domains/:domain/subdomains', async (req, res) => {
    const parent = req.params.domain;
    const caller = callerOf(res);
    if (!canManageDomain(caller.memberships, parent)) throw refused('may_not_manage', parent, '');
    const creator = accountIdOf(caller);
    if (creator === undefined) throw new HttpError(403, 'only an account may create a domain');
    const body = parseBody(CreateDomainBody, 'CreateDomainBody', req.body);
    // Checked before the lookup: a name holding NUL would fail in PostgreSQL as a 500.
    if (!isDomainName(parent)) throw new HttpError(404, `domain ${JSON.stringify(parent)} not found`);
    const created = await store.createDomain(
      { name: body.name, displayName: body.displayName, joinPolicy: body.joinPolicy ?? 'invite-only', isPublic: body.isPublic ?? false, parentName: parent },
      creator,
    );
    if (!created.ok && created.reason === 'account_deleted') throw deletedAccountError(creator, 403);
    if (!created.ok && created.reason === 'parent_not_found') throw new HttpError(404, `domain ${JSON.stringify(parent)} not found`);
    if (!created.ok && created.reason === 'may_not_manage') throw refused('may_not_manage', parent, '');
    if (!created.ok) throw new HttpError(409, `domain name ${JSON.stringify(body.name)} is already taken`);
    res.status(201).json(domainJson(created.value));
  });

  return router;
}
