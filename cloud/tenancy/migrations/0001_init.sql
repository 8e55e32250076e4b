-- Tenancy 0001: domains and memberships.
-- A domain is an organization (or a unit of one); a membership says which account belongs to it, with
-- which role and how it joined. account_id names an account in the identity provider, not a local row.

CREATE TABLE domains (
  id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  name         text        NOT NULL,
  display_name text        NOT NULL,
  join_policy  text        NOT NULL DEFAULT 'invite-only',
  created_at   timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT domains_name_key UNIQUE (name),
  -- The name travels in membership claims: 1 to 63 of [a-z0-9-], not starting with '-'.
  CONSTRAINT domains_name_format CHECK (name ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
  CONSTRAINT domains_display_name_present CHECK (length(btrim(display_name)) > 0),
  CONSTRAINT domains_join_policy_known CHECK (join_policy IN ('open-via-idp', 'invite-only'))
);

CREATE TABLE memberships (
  account_id  uuid        NOT NULL,
  domain_id   uuid        NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
  role        text        NOT NULL,
  external_id text,
  -- Display and audit only; no rule branches on it.
  joined_via  text        NOT NULL DEFAULT 'invite',
  created_at  timestamptz NOT NULL DEFAULT now(),
  -- The primary key is the (account_id, domain_id) uniqueness rule and, by its leading column, the
  -- index of the login path (every membership of one account).
  CONSTRAINT memberships_pkey PRIMARY KEY (account_id, domain_id),
  CONSTRAINT memberships_role_present CHECK (length(role) > 0),
  CONSTRAINT memberships_joined_via_known CHECK (joined_via IN ('self-idp', 'invite', 'local'))
);

-- Member counts, administrator counts and the cascade from domains all look members up by domain.
CREATE INDEX memberships_domain_id_idx ON memberships (domain_id, role);
