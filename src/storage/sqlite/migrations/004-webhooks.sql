-- Webhooks per account. A deleted webhook keeps its row (deleted_at set) so that its delivery
-- history stays in the database, but every read through the API treats it as gone.
CREATE TABLE webhooks (
  id              TEXT PRIMARY KEY,
  account_id      TEXT NOT NULL,
  kind            TEXT NOT NULL CHECK (kind IN ('generic', 'telegram')),
  url             TEXT NOT NULL,            -- '' for telegram: the Bot API base is configured, not chosen
  events          TEXT NOT NULL,            -- JSON array of event names
  description     TEXT NOT NULL DEFAULT '',
  is_active       INTEGER NOT NULL DEFAULT 1,
  secret_sealed   TEXT,                     -- generic: the signing secret, sealed with the data dir's key
  telegram_chat   TEXT,
  telegram_token_sealed TEXT,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  deleted_at      INTEGER
);
CREATE INDEX webhooks_by_account ON webhooks (account_id, deleted_at);

-- One row per event and webhook. message_id is the Standard Webhooks `webhook-id`: the same on
-- every attempt and on a redelivery, so receivers can drop repeats.
CREATE TABLE webhook_deliveries (
  id              TEXT PRIMARY KEY,
  webhook_id      TEXT NOT NULL REFERENCES webhooks (id),
  message_id      TEXT NOT NULL,
  event_type      TEXT NOT NULL,
  payload         TEXT NOT NULL,            -- JSON last sent (or to be sent)
  status          TEXT NOT NULL CHECK (status IN ('pending', 'success', 'failed')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  response_status INTEGER,
  response_body   TEXT,
  error_code      TEXT,
  next_attempt_at INTEGER,
  claimed_by      TEXT,
  claimed_until   INTEGER,
  last_attempt_at INTEGER,
  created_at      INTEGER NOT NULL,
  UNIQUE (webhook_id, message_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, created_at);
