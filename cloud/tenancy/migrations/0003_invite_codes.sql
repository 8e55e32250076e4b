-- Tenancy 0003: invite codes. A code grants a role in a domain to whoever redeems it first, before it
-- expires. Redemption is one conditional UPDATE on this table (see pg-store.ts).

CREATE TABLE invite_codes (
  id          uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  domain_id   uuid        NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
  code        text        NOT NULL,
  role        text        NOT NULL,
  created_by  uuid        NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  redeemed_by uuid,
  redeemed_at timestamptz,
  -- The unique constraint's index (text, default collation) is what redemption looks codes up by.
  CONSTRAINT invite_codes_code_key UNIQUE (code),
  CONSTRAINT invite_codes_code_format CHECK (code ~ '^[0-9a-f]{32}$'),
  CONSTRAINT invite_codes_role_present CHECK (length(role) > 0),
  CONSTRAINT invite_codes_redemption_complete CHECK ((redeemed_by IS NULL) = (redeemed_at IS NULL))
);

CREATE INDEX invite_codes_domain_id_idx ON invite_codes (domain_id);
