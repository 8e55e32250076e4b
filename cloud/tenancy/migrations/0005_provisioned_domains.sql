-- Tenancy 0005: which domains the provisioner created. POST /internal/domains answers a retry with the
-- domain its earlier call created; without this mark it also "recognised" a domain an end user had
-- created under the same name, and handed it the new organization. Domains from before this revision
-- are unmarked: the provisioner's retries of those answer 409, where they used to adopt them.

ALTER TABLE domains ADD COLUMN provisioned boolean NOT NULL DEFAULT false;
