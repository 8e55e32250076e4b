-- Tenancy 0008: an invite code lives only as long as its creator may create it (pg-store.ts). Removing
-- a membership revokes the unredeemed codes its account can no longer issue, and the account-deleted
-- event revokes all of them; both find an account's unredeemed codes through this index, since the
-- table keeps every code ever redeemed. Every code records its creator (created_by, since 0003).
CREATE INDEX invite_codes_unredeemed_created_by_idx ON invite_codes (created_by) WHERE redeemed_at IS NULL;

-- Codes made before this revision by accounts that have since lost the right: revoked once, here, by
-- the rule as it stands (CONTRACTS.md): a creator keeps the right while a platform administrator
-- (admin, in any domain) or a business_admin of the code's domain granting no more than that. Roles
-- weighing more than business_admin other than admin do not exist.
DELETE FROM invite_codes c
 WHERE c.redeemed_at IS NULL
   AND NOT EXISTS (
         SELECT 1 FROM memberships m
          WHERE m.account_id = c.created_by
            AND (m.role = 'admin' OR (m.domain_id = c.domain_id AND m.role = 'business_admin' AND c.role <> 'admin')));
