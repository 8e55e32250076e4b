/**
 * Invite codes: a manager creates one, anyone holding it redeems it once, before it expires and while
 * its creator still may create it (a removed or deleted creator's unredeemed codes are revoked, and
 * her token, which outlives the removal, makes no new one).
 */
import { Router } from 'express';
import { HttpError } from '../../../shared/errors.js';
import { callerOf } from '../../../shared/http.js';
import { canManageDomain } from '../../../shared/roles.js';
import { INVITE_CODE, inviteLifetimeMs, newInviteCode } from '../invite-codes.js';
import type { TenancyStore } from '../model.js';
import { accountIdOf, mayGrantRole } from '../policy.js';
import { deletedAccountError, InviteCodeBody, inviteCodeJson, isDomainName, membershipJson, parseBody } from '../wire.js';
import { refused } from './refusals.js';

/** Unknown, expired and redeemed codes all get this one answer, so it says nothing about which. */
export const INVALID_INVITE_CODE = 'invalid invite code';

export function inviteCodeRoutes(store: TenancyStore): Router {
  const router = Router();

  router.post('/domains/:domain/invite-codes', async (req, res) => {
    const name = req.params.domain;
    const caller = callerOf(res);
    // The token is checked first (a caller it gives no right learns nothing, not even a 400 for her
    // body); the store checks the memberships as stored again, since a token outlives a removal.
    if (!canManageDomain(caller.memberships, name)) throw refused('may_not_manage', name, '');
    const creator = accountIdOf(caller);
    if (creator === undefined) throw new HttpError(403, 'only an account may create invite codes');
    const body = parseBody(InviteCodeBody, 'InviteCodeBody', req.body);
    if (!mayGrantRole(caller.memberships, name, body.role)) throw refused('may_not_grant', name, body.role);
    const created = isDomainName(name)
      ? await store.createInviteCode({ domainName: name, code: newInviteCode(), role: body.role, createdBy: creator, lifetimeMs: inviteLifetimeMs(body.expiresInHours) })
      : undefined;
    if (created && !created.ok) {
      const { reason } = created;
      if (reason === 'account_deleted') throw deletedAccountError(creator, 403);
      if (reason !== 'domain_not_found') throw refused(reason, name, body.role);
    }
    if (!created?.ok) throw new HttpError(404, `domain ${JSON.stringify(name)} not found`);
    res.status(201).json(inviteCodeJson(created.value));
  });

  router.post('/invite-codes/:code/redeem', async (req, res) => {
    const account = accountIdOf(callerOf(res));
    if (account === undefined) throw new HttpError(403, 'only an account may redeem an invite code');
    const code = req.params.code;
    if (!INVITE_CODE.test(code)) throw new HttpError(404, INVALID_INVITE_CODE);
    const redeemed = await store.redeemInviteCode(code, account);
    if (!redeemed.ok && redeemed.reason === 'invalid_code') throw new HttpError(404, INVALID_INVITE_CODE);
    if (!redeemed.ok && redeemed.reason === 'account_deleted') throw deletedAccountError(account, 403);
    if (!redeemed.ok) throw new HttpError(409, 'you are already a member of the domain this code invites to; the code stays unused');
    res.status(201).json(membershipJson(redeemed.value));
  });

  return router;
}
