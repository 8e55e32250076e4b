-- Alerts written in the ingest transaction and relayed to Kafka by the relay loop.
CREATE TABLE IF NOT EXISTS alert_outbox (
  seq         bigserial UNIQUE,
  alert_id    text PRIMARY KEY,
  message_key text NOT NULL,
  payload     jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  sent_at     timestamptz
);
CREATE INDEX IF NOT EXISTS alert_outbox_unsent ON alert_outbox (seq) WHERE sent_at IS NULL;

-- Per-gateway ingest keys, chosen by X-Key-Id. See cloud/telemetry/README.md to add or revoke one.
CREATE TABLE IF NOT EXISTS ingest_keys (
  key_id     text PRIMARY KEY CHECK (key_id ~ '^[A-Za-z0-9._:-]{1,128}$'),
  secret     text NOT NULL CHECK (length(secret) >= 16),
  note       text,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);
