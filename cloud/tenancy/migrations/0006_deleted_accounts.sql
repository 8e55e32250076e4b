-- Tenancy 0006: deleted accounts. The account-deleted event removes every membership of an account;
-- without a record of the deletion, a redemption already under way, or a request made later with a
-- token the account still held, added a membership back, and nothing ever removed it again. Every
-- write that adds a membership now checks this table (see pg-store.ts). Account ids are the identity
-- provider's uuids and are never reused, so a row here is final.

CREATE TABLE deleted_accounts (
  account_id uuid        PRIMARY KEY,
  deleted_at timestamptz NOT NULL DEFAULT now()
);
