-- Tenancy 0007: the administrator a provisioned domain was created for. POST /internal/domains took a
-- call with the same attributes for a retry whatever administrator it named, and made that account
-- business_admin: a second organization whose name and display name derived alike was handed the
-- first one's domain. A retry now names the administrator its first call named (or, like it, none).
ALTER TABLE domains ADD COLUMN provisioned_admin uuid;

-- Domains provisioned before this revision: their earliest administrator, the one the provisioning call
-- made unless it has left since (then a retry naming it answers 409).
UPDATE domains d
   SET provisioned_admin = (
         SELECT m.account_id FROM memberships m
          WHERE m.domain_id = d.id AND m.role = 'business_admin'
          ORDER BY m.created_at, m.account_id
          LIMIT 1)
 WHERE d.provisioned;
