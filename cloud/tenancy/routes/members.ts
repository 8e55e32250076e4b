/**
 * Memberships as end users see them: one's own, joining, direct invitation and removal.
 */
import { Router } from 'express';
import { HttpError, sendText } from '../../../shared/errors.js';
import { callerOf } from '../../../shared/http.js';
import { canManageDomain } from '../../../shared/roles.js';
import type { TenancyStore } from '../model.js';
import { accountIdOf, isUuid, mayGrantRole, removalAuthority } from '../policy.js';
import { deletedAccountError, InviteBody, isDomainName, membershipJson, parseBody } from '../wire.js';

const domainNotFound = (name: string) => new HttpError(404, `domain ${JSON.stringify(name)} not found`);

export function memberRoutes(store: TenancyStore): Router {
  const router = Router();

  router.get('/me/memberships', async (_req, res) => {
    const account = accountIdOf(callerOf(res));
    res.json(account === undefined ? [] : (await store.membershipsOf(account)).map(membershipJson));
  });

  router.post('/domains/:domain/join', async (req, res) => {
    const name = req.params.domain;
    const account = accountIdOf(callerOf(res));
    if (account === undefined) throw new HttpError(403, 'only an account may join a domain');
    const domain = isDomainName(name) ? await store.findDomain(name) : undefined;
    if (!domain) throw domainNotFound(name);
    if (domain.joinPolicy !== 'open-via-idp') throw new HttpError(403, `domain ${JSON.stringify(name)} is joined by invitation only`);
    const joined = await store.addMember(name, { accountId: account, role: 'member', joinedVia: 'self-idp' }, 'keep');
    if (!joined.ok && joined.reason === 'account_deleted') throw deletedAccountError(account, 403);
    if (!joined.ok) throw domainNotFound(name);
    res.status(joined.value.created ? 201 : 200).json(membershipJson(joined.value.membership));
  });

  router.post('/domains/:domain/invite', async (req, res) => {
    const name = req.params.domain;
    const caller = callerOf(res);
    if (!canManageDomain(caller.memberships, name)) throw new HttpError(403, `you may not manage domain ${JSON.stringify(name)}`);
    const body = parseBody(InviteBody, 'InviteBody', req.body);
    if (!mayGrantRole(caller.memberships, name, body.role)) throw new HttpError(403, `you may not grant the role ${body.role}`);
    // Checked before the lookup: a name holding NUL would fail in PostgreSQL as a 500.
    if (!isDomainName(name)) throw domainNotFound(name);
    const accountId = body.accountId.toLowerCase();
    const added = await store.addMember(name, { accountId, role: body.role, joinedVia: 'invite' }, 'refuse');
    if (!added.ok && added.reason === 'account_deleted') throw deletedAccountError(accountId, 409);
    if (!added.ok && added.reason === 'already_member') throw new HttpError(409, `account ${body.accountId} is already a member of ${name}`);
    if (!added.ok) throw domainNotFound(name);
    res.status(201).json(membershipJson(added.value.membership));
  });

  router.delete('/domains/:domain/members/:accountId', async (req, res) => {
    const { domain, accountId } = req.params;
    // Removing oneself is decided by identity alone, before any policy is consulted.
    if (removalAuthority(callerOf(res), domain, accountId) === 'forbidden') {
      sendText(res, 403, 'forbidden');
      return;
    }
    if (!isDomainName(domain)) throw domainNotFound(domain);
    if (!isUuid(accountId)) throw new HttpError(404, `account ${JSON.stringify(accountId.slice(0, 40))} is not a member of ${domain}`);
    const removed = await store.removeMember(domain, accountId.toLowerCase());
    if (removed.ok) {
      res.status(204).end();
      return;
    }
    switch (removed.reason) {
      case 'domain_not_found':
        throw domainNotFound(domain);
      case 'not_member':
        throw new HttpError(404, `account ${accountId} is not a member of ${domain}`);
      case 'last_administrator':
        throw new HttpError(409, `account ${accountId} is the last administrator of ${domain}; appoint another administrator first`);
    }
  });

  return router;
}
