-- Requests per rolling minute for this account; NULL means the configured default.
ALTER TABLE accounts ADD COLUMN rate_limit INTEGER CHECK (rate_limit IS NULL OR rate_limit > 0);

-- API keys are stored as a SHA-256 of the secret (the secret has 190 bits of entropy, so a slow
-- hash buys nothing). `sealed` holds the secret encrypted for the short reveal window, then NULL.
CREATE TABLE api_keys (
  id          TEXT PRIMARY KEY,
  account_id  TEXT NOT NULL REFERENCES accounts (id),
  name        TEXT NOT NULL,
  key_hash    TEXT NOT NULL UNIQUE,
  key_prefix  TEXT NOT NULL,
  role        TEXT NOT NULL CHECK (role IN ('admin', 'tech', 'readonly')),
  is_active   INTEGER NOT NULL DEFAULT 1,
  revoked_at  INTEGER,
  sealed      TEXT,
  reveal_until INTEGER,
  created_at  INTEGER NOT NULL,
  last_used_at INTEGER
);
CREATE INDEX api_keys_by_account ON api_keys (account_id, created_at);

CREATE TABLE sessions (
  token_hash TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  expires_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);

-- A retried upload with the same key returns the job the first one made.
CREATE TABLE idempotency_keys (
  account_id   TEXT NOT NULL,
  key          TEXT NOT NULL,
  fingerprint  TEXT NOT NULL,
  job_id       TEXT,
  created_at   INTEGER NOT NULL,
  PRIMARY KEY (account_id, key)
);
