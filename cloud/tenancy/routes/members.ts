/**
 * Memberships as end users see them: one's own, joining, direct invitation and removal. A direct
 * invitation, and the removal of another member, need the right twice: the caller's token is checked
 * first, then the store checks the acting account's memberships as stored, since a token outlives a
 * removal (a removed administrator invited herself back with it, or removed those she left behind) and
 * an account deletion.
 */
import { Router } from 'express';
import { HttpError, sendText } from '../../../shared/errors.js';
import { callerOf } from '../../../shared/http.js';
import { canManageDomain } from '../../../shared/roles.js';
import type { NewMember, TenancyStore } from '../model.js';
import { accountIdOf, isUuid, mayGrantRole, removalAuthority } from '../policy.js';
import { deletedAccountError, InviteBody, isDomainName, membershipJson, parseBody } from '../wire.js';
import { refused } from './refusals.js';

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
    // As for invite codes: the token first (a caller it gives no right learns nothing, not even a 400
    // for her body), and only an account, whose memberships the store can check again.
    if (!canManageDomain(caller.memberships, name)) throw refused('may_not_manage', name, '');
    const inviter = accountIdOf(caller);
    if (inviter === undefined) throw new HttpError(403, 'only an account may invite a member');
    const body = parseBody(InviteBody, 'InviteBody', req.body);
    if (!mayGrantRole(caller.memberships, name, body.role)) throw refused('may_not_grant', name, body.role);
    // Checked before the lookup: a name holding NUL would fail in PostgreSQL as a 500.
    if (!isDomainName(name)) throw domainNotFound(name);
    const member: NewMember = { accountId: body.accountId.toLowerCase(), role: body.role, joinedVia: 'invite', invitedBy: inviter };
    const added = await store.addMember(name, member, 'refuse');
    if (added.ok) {
      res.status(201).json(membershipJson(added.value.membership));
      return;
    }
    switch (added.reason) {
      case 'inviter_deleted':
        throw deletedAccountError(inviter, 403);
      case 'may_not_manage':
      case 'may_not_grant':
        throw refused(added.reason, name, body.role);
      case 'domain_not_found':
        throw domainNotFound(name);
      case 'account_deleted':
        throw deletedAccountError(member.accountId, 409);
      case 'already_member':
        throw new HttpError(409, `account ${body.accountId} is already a member of ${name}`);
    }
  });

  router.delete('/domains/:domain/members/:accountId', async (req, res) => {
    const { domain, accountId } = req.params;
    const caller = callerOf(res);
    // Removing oneself is decided by identity alone, before any policy is consulted. A manager's right
    // is checked again by the store against her memberships as stored, so only an account, which has
    // some, removes another member. Every refusal is the seed's one body, whichever check made it.
    const authority = removalAuthority(caller, domain, accountId);
    const remover = authority === 'manager' ? accountIdOf(caller) : undefined;
    if (authority === 'forbidden' || (authority === 'manager' && remover === undefined)) {
      sendText(res, 403, 'forbidden');
      return;
    }
    if (!isDomainName(domain)) throw domainNotFound(domain);
    if (!isUuid(accountId)) throw new HttpError(404, `account ${JSON.stringify(accountId.slice(0, 40))} is not a member of ${domain}`);
    const removed = await store.removeMember(domain, accountId.toLowerCase(), remover);
    if (removed.ok) {
      res.status(204).end();
      return;
    }
    switch (removed.reason) {
      case 'remover_deleted':
      case 'may_not_manage':
        sendText(res, 403, 'forbidden');
        return;
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
