-- Registry 0001: organizations, the system of record of who signed up and how far provisioning got.
-- Two independent state machines live on a row: status (provisioning progress) and license_status.

CREATE TABLE organizations (
  id             uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  name           text        NOT NULL,
  display_name   text        NOT NULL DEFAULT '',
  tier           text        NOT NULL,
  host           text        NOT NULL DEFAULT '',
  identity_mode  text        NOT NULL DEFAULT 'platform',
  issuer         text        NOT NULL DEFAULT '',
  license_status text        NOT NULL DEFAULT 'active',
  status         text        NOT NULL DEFAULT 'provisioning',
  status_detail  text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT organizations_name_present CHECK (length(btrim(name)) > 0),
  CONSTRAINT organizations_tier_known CHECK (tier IN ('pooled', 'dedicated', 'on-prem')),
  CONSTRAINT organizations_identity_mode_known CHECK (identity_mode IN ('platform', 'byo-idp')),
  CONSTRAINT organizations_license_status_known CHECK (license_status IN ('active', 'suspended', 'expired')),
  CONSTRAINT organizations_status_known CHECK (status IN ('provisioning', 'ready', 'failed', 'suspended'))
);

-- Names are unique regardless of case: "Acme" and "acme" are one organization.
CREATE UNIQUE INDEX organizations_name_key ON organizations (lower(name));

-- The provisioner polls organizations still provisioning, oldest first, every 15 seconds.
CREATE INDEX organizations_provisioning_idx ON organizations (created_at, id) WHERE status = 'provisioning';
