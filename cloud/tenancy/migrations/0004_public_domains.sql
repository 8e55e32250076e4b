-- Tenancy 0004: public domains. Public domains are listed (with member counts) to every caller.

ALTER TABLE domains ADD COLUMN is_public boolean NOT NULL DEFAULT false;

-- The public listing pages by name (keyset: name > last name seen), over public domains only.
CREATE INDEX domains_public_name_idx ON domains (name) WHERE is_public;
