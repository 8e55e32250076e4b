/**
 * The answer to a manager's right refused, shared by every route that needs one (invite codes, direct
 * invitations, subdomains): the same whether the caller's token says so or, since a token outlives a
 * removal, her memberships as stored do.
 */
import { HttpError } from '../../../shared/errors.js';
import type { InviteCodeRefusal } from '../policy.js';

/**
 * 403 naming what the caller may not do: manage `domain`, or grant `role` (ignored for `may_not_manage`).
 *
 * @example
 * refused('may_not_grant', 'acme', 'admin'); // 403 "you may not grant the role admin"
 */
export function refused(refusal: InviteCodeRefusal, domain: string, role: string): HttpError {
  return refusal === 'may_not_manage' ? new HttpError(403, `you may not manage domain ${JSON.stringify(domain)}`) : new HttpError(403, `you may not grant the role ${role}`);
}
