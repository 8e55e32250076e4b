-- Tenancy 0007: the administrator a provisioned domain was created for. POST /internal/domains took a
-- call with the same attributes for a retry whatever administrator it named, and made that account
-- business_admin: a second organization whose name and display name derived alike was handed the
-- first one's domain. A retry now names the administrator its first call named (or, like it, none).
ALTER TABLE domains ADD COLUMN provisioned_admin uuid;

-- Domains provisioned before this revision: their earliest administrator that provisioning made one
-- (joined_via 'local', as ensureDomain inserts it), unless it has left since (then a retry naming it
-- answers 409). An administrator who joined by invite or through the IdP is not the one the domain was
-- provisioned for: a domain provisioned with none stays NULL, and its retries naming none still match.
-- A NULL left here, or written by a replica of the previous revision during the deploy, is settled by
-- the first retry naming an administrator that provisioning made business_admin (pg-store.ts).
UPDATE domains d
   SET provisioned_admin = (
         SELECT m.account_id FROM memberships m
          WHERE m.domain_id = d.id AND m.role = 'business_admin' AND m.joined_via = 'local'
          ORDER BY m.created_at, m.account_id
          LIMIT 1)
 WHERE d.provisioned;
