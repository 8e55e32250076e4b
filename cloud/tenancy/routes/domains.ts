/**
 * Domains as end users see them: the public listing, creation, and subdomains (private ones only to
 * the parent's members and platform administrators). Creating a subdomain needs the right to manage
 * the parent twice: in the caller's token, then in her memberships as stored, since a token outlives a
 * removal. Without `limit`, the public listing and a domain's subdomains are written as they are read, a
 * page at a time: any account may make public domains, and a domain's manager subdomains, without limit.
 */
import { Router } from 'express';
import type { Logger } from 'pino';
import { HttpError } from '../../../shared/errors.js';
import { callerOf } from '../../../shared/http.js';
import { canManageDomain } from '../../../shared/roles.js';
import type { ListedDomain, TenancyStore } from '../model.js';
import { accountIdOf, maySeePrivateSubdomains } from '../policy.js';
import { CreateDomainBody, deletedAccountError, domainJson, isDomainName, listedDomainJson, parseBody } from '../wire.js';
import { linkNextPage, MAX_PAGE_SIZE, pageOf, sendWholeListing, type PageReader } from './paging.js';
import { refused } from './refusals.js';

/**
 * `logger` names a public listing that fails after it began to be written (see sendWholeListing);
 * any other failure reaches the app's error handler, which logs it.
 */
export function domainRoutes(store: TenancyStore, logger?: Logger): Router {
  const router = Router();

  router.get('/domains', async (req, res) => {
    const { after, limit } = pageOf(req);
    if (limit === undefined) {
      const first = await store.listPublicDomains({ after, limit: MAX_PAGE_SIZE });
      await sendWholeListing(res, { what: 'public domains', first, readPage: (page) => store.listPublicDomains(page), toJson: listedDomainJson }, logger);
      return;
    }
    const domains = await store.listPublicDomains({ after, limit });
    linkNextPage(req, res, { after, limit }, domains.map((d) => d.name));
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
    const { after, limit } = pageOf(req);
    const visible = maySeePrivateSubdomains(callerOf(res).memberships, parent) ? 'all' : 'public';
    const children = isDomainName(parent) ? await store.listSubdomains(parent, { after, limit: limit ?? MAX_PAGE_SIZE }, visible) : undefined;
    if (!children) throw new HttpError(404, `domain ${JSON.stringify(parent)} not found`);
    if (limit === undefined) {
      // A parent removed meanwhile ends the listing where it is.
      const readPage: PageReader<ListedDomain> = async (page) => (await store.listSubdomains(parent, page, visible)) ?? [];
      await sendWholeListing(res, { what: 'subdomains', first: children, readPage, toJson: listedDomainJson }, logger);
      return;
    }
    linkNextPage(req, res, { after, limit }, children.map((d) => d.name));
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
