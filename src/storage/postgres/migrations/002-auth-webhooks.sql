-- API keys, login sessions, idempotency keys, webhooks and their deliveries: the same data as
-- SQLite's migrations 002 and 004 leave it. Times are epoch milliseconds (BIGINT).

-- A key's secret is stored as its SHA-256 (190 bits of entropy: a slow hash buys nothing);
-- `sealed` holds it encrypted for the short reveal window, then NULL.
CREATE TABLE api_keys (
  id           TEXT PRIMARY KEY,
  account_id   TEXT NOT NULL REFERENCES accounts (id),
  name         TEXT NOT NULL,
  key_hash     TEXT NOT NULL UNIQUE,
  key_prefix   TEXT NOT NULL,
  role         TEXT NOT NULL CHECK (role IN ('admin', 'tech', 'readonly')),
  is_active    BOOLEAN NOT NULL DEFAULT TRUE,
  revoked_at   BIGINT,
  sealed       TEXT,
  reveal_until BIGINT,
  created_at   BIGINT NOT NULL,
  last_used_at BIGINT
);
CREATE INDEX api_keys_by_account ON api_keys (account_id, created_at);

CREATE TABLE sessions (
  token_hash TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  expires_at BIGINT NOT NULL,
  created_at BIGINT NOT NULL
);
-- Every new session purges the expired ones; without this that purge reads the whole table.
CREATE INDEX sessions_by_expiry ON sessions (expires_at);

-- A retried upload with the same key returns the job the first one made.
CREATE TABLE idempotency_keys (
  account_id  TEXT NOT NULL,
  key         TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  job_id      TEXT,
  created_at  BIGINT NOT NULL,
  PRIMARY KEY (account_id, key)
);
-- Every claim purges the keys past their day; without this that purge reads the whole table.
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);

-- A deleted webhook keeps its row (deleted_at set) so that its delivery history stays, but every
-- read through the API treats it as gone. `events` is a JSON array of event names, as in SQLite.
CREATE TABLE webhooks (
  id                    TEXT PRIMARY KEY,
  account_id            TEXT NOT NULL,
  kind                  TEXT NOT NULL CHECK (kind IN ('generic', 'telegram')),
  url                   TEXT NOT NULL,
  events                TEXT NOT NULL,
  description           TEXT NOT NULL DEFAULT '',
  is_active             BOOLEAN NOT NULL DEFAULT TRUE,
  secret_sealed         TEXT,
  telegram_chat         TEXT,
  telegram_token_sealed TEXT,
  created_at            BIGINT NOT NULL,
  updated_at            BIGINT NOT NULL,
  deleted_at            BIGINT
);
CREATE INDEX webhooks_by_account ON webhooks (account_id, deleted_at);

-- One row per event and webhook. message_id is the Standard Webhooks `webhook-id`: the same on
-- every attempt and on a redelivery, so receivers can drop repeats. `seq` is insertion order:
-- SQLite lists deliveries made in one millisecond by rowid, and without it that order would be
-- whatever the heap gives.
CREATE TABLE webhook_deliveries (
  id              TEXT PRIMARY KEY,
  seq             BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
  webhook_id      TEXT NOT NULL REFERENCES webhooks (id),
  message_id      TEXT NOT NULL,
  event_type      TEXT NOT NULL,
  payload         TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('pending', 'success', 'failed')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  response_status INTEGER,
  response_body   TEXT,
  error_code      TEXT,
  next_attempt_at BIGINT,
  claimed_by      TEXT,
  claimed_until   BIGINT,
  last_attempt_at BIGINT,
  created_at      BIGINT NOT NULL,
  UNIQUE (webhook_id, message_id)
);
-- Senders poll for due deliveries; finished ones, nearly all of them, stay out of this index.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, seq) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, created_at, seq);
