-- Tenancy 0002: subdomains. A domain may have a parent; deleting the parent deletes its children
-- (and, through them, their memberships and codes).

ALTER TABLE domains
  ADD COLUMN parent_id uuid REFERENCES domains (id) ON DELETE CASCADE,
  ADD CONSTRAINT domains_not_own_parent CHECK (parent_id IS NULL OR parent_id <> id);

-- Direct children of a domain, in name order (the subdomain listing's keyset).
CREATE INDEX domains_parent_id_name_idx ON domains (parent_id, name) WHERE parent_id IS NOT NULL;
