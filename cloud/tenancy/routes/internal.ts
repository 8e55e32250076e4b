/**
 * The internal write routes, signed with the shared key ring (X-Signature over the exact body):
 * claims-gateway's provisioning and the provisioner's domain creation. Both are idempotent: callers
 * retry, and a replay answers exactly like the first call. (The login path, GET /internal/memberships,
 * is in login-path.ts.)
 */
import { Router } from 'express';
import { HttpError } from '../../../shared/errors.js';
import type { KeyRing } from '../../../shared/hmac.js';
import { signedBody } from '../../../shared/signed-body.js';
import type { TenancyStore } from '../model.js';
import { deletedAccountError, domainJson, InternalDomainBody, membershipJson, parseBody, ProvisionBody } from '../wire.js';

export function internalRoutes(store: TenancyStore, keys: KeyRing): Router {
  const router = Router();
  const signed = signedBody({ keys });

  router.post('/internal/provision', ...signed, async (req, res) => {
    const body = parseBody(ProvisionBody, 'ProvisionBody', req.body);
    const accountId = body.accountId.toLowerCase();
    const provisioned = await store.addMember(
      body.domainName,
      { accountId, role: body.role, externalId: body.externalId, joinedVia: body.joinedVia ?? 'local' },
      'keep',
    );
    if (!provisioned.ok && provisioned.reason === 'account_deleted') throw deletedAccountError(accountId, 409);
    if (!provisioned.ok) throw new HttpError(404, `domain ${JSON.stringify(body.domainName)} not found`);
    const { membership } = provisioned.value;
    // The seed says only "member added", and claims-gateway calls this on every first login: an existing
    // membership is kept as it is (a login must not demote an administrator, nor promote anyone, nor be
    // refused), and the answer is that membership as stored, so the caller sees the role the account
    // actually holds. A retry answers exactly like the call that created it.
    res.json(membershipJson(membership));
  });

  router.post('/internal/domains', ...signed, async (req, res) => {
    const body = parseBody(InternalDomainBody, 'InternalDomainBody', req.body);
    const adminAccountId = body.adminAccountId?.toLowerCase();
    const ensured = await store.ensureDomain({
      name: body.name,
      displayName: body.displayName,
      joinPolicy: body.joinPolicy ?? 'invite-only',
      isPublic: body.isPublic ?? false,
      parentName: body.parentName,
      adminAccountId,
    });
    if (!ensured.ok && ensured.reason === 'account_deleted') throw deletedAccountError(adminAccountId ?? '', 409);
    if (!ensured.ok && ensured.reason === 'parent_not_found') throw new HttpError(404, `parent domain ${JSON.stringify(body.parentName)} not found`);
    if (!ensured.ok) throw new HttpError(409, `domain ${JSON.stringify(body.name)} already exists, with different attributes, for another administrator, or created by an end user`);
    res.json(domainJson(ensured.value));
  });

  return router;
}
