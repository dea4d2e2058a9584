-- The engine's tables: accounts and billing, the shared result cache, jobs with their chunks and
-- checkpoint outputs, and the outbox. The same data as SQLite's migrations 001..009 leave it.
-- Epoch-millisecond times, balances and ledger amounts are BIGINT; row counts and indexes INTEGER.
-- Text that must sort as SQLite sorts it (binary) is ordered with COLLATE "C" in the queries.

-- `seq` is a compact key for the hot billing table, where a 40-character id per row doubles its
-- size. The CHECK is the last line of defence for "the balance never goes below 0".
CREATE TABLE accounts (
  seq           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id            TEXT NOT NULL UNIQUE,
  email         TEXT,
  password_hash TEXT,
  credits       BIGINT NOT NULL CHECK (credits >= 0),
  status        TEXT NOT NULL DEFAULT 'active',
  rate_limit    INTEGER CHECK (rate_limit IS NULL OR rate_limit > 0),
  created_at    BIGINT NOT NULL
);
-- SQLite compares emails with COLLATE NOCASE: one account per address, whatever its case.
CREATE UNIQUE INDEX accounts_email_lower ON accounts (lower(email));

-- Append-only. A charge line's id is derived from the batch it pays for, so a replayed batch
-- collides on UNIQUE (id) instead of charging again; `seq` is what billing rows point at.
CREATE TABLE ledger (
  seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id         TEXT NOT NULL UNIQUE,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  delta      BIGINT NOT NULL,
  reason     TEXT NOT NULL,
  kind       TEXT,
  job_id     TEXT,
  created_at BIGINT NOT NULL
);
CREATE INDEX ledger_by_account ON ledger (account_id, created_at);
CREATE INDEX ledger_by_job ON ledger (job_id);

-- The repeat-free window: the last time an account paid for a key, and the ledger line that did.
CREATE TABLE billing_cache (
  account_seq BIGINT NOT NULL,
  kind        TEXT NOT NULL,
  lookup_key  TEXT NOT NULL,
  charged_at  BIGINT NOT NULL,
  ledger_seq  BIGINT NOT NULL,
  PRIMARY KEY (account_seq, kind, lookup_key)
);

-- Answers shared by all accounts; a hit saves a provider call, not a charge. `result` is JSON text.
CREATE TABLE result_cache (
  kind         TEXT NOT NULL,
  lookup_key   TEXT NOT NULL,
  result       TEXT NOT NULL,
  looked_up_at BIGINT NOT NULL,
  PRIMARY KEY (kind, lookup_key)
);

-- Credits set aside by a chunk before its lookups, released in the checkpoint that settles them.
CREATE TABLE credit_reservations (
  job_id      TEXT NOT NULL,
  chunk_index INTEGER NOT NULL,
  account_id  TEXT NOT NULL,
  amount      BIGINT NOT NULL CHECK (amount >= 0),
  PRIMARY KEY (job_id, chunk_index)
);
CREATE INDEX reservations_by_account ON credit_reservations (account_id);

-- `failures` counts retryable failures in a row, apart from `attempts` (every lease take).
CREATE TABLE jobs (
  id                TEXT PRIMARY KEY,
  account_id        TEXT NOT NULL REFERENCES accounts (id),
  type              TEXT NOT NULL,
  status            TEXT NOT NULL,
  phase             TEXT NOT NULL,
  reason            TEXT,
  error_message     TEXT,
  input_key         TEXT NOT NULL,
  input_name        TEXT,
  options           TEXT NOT NULL DEFAULT '{}',
  header            TEXT,
  key_column        INTEGER,
  total_rows        INTEGER,
  chunk_count       INTEGER,
  processed_rows    INTEGER NOT NULL DEFAULT 0,
  found_rows        INTEGER NOT NULL DEFAULT 0,
  invalid_rows      INTEGER NOT NULL DEFAULT 0,
  duplicate_rows    INTEGER NOT NULL DEFAULT 0,
  error_rows        INTEGER NOT NULL DEFAULT 0,
  credits_used      BIGINT NOT NULL DEFAULT 0,
  lease_owner       TEXT,
  lease_epoch       INTEGER NOT NULL DEFAULT 0,
  lease_expires_at  BIGINT,
  attempts          INTEGER NOT NULL DEFAULT 0,
  failures          INTEGER NOT NULL DEFAULT 0,
  result_all_key    TEXT,
  result_found_key  TEXT,
  result_errors_key TEXT,
  created_at        BIGINT NOT NULL,
  started_at        BIGINT,
  updated_at        BIGINT NOT NULL,
  finished_at       BIGINT
);
CREATE INDEX jobs_by_state ON jobs (status, phase, created_at);
CREATE INDEX jobs_by_account ON jobs (account_id, created_at);

-- A chunk is the unit of resume: `cursor` rows of this pass are committed, the rest are redone.
-- `lease_epoch` is the fencing token: a commit names the epoch it holds and is refused if stale.
-- `pass` is 0 for the first run and one more per retry of the failed rows, which `pass_rows`
-- counts (NULL in the first pass); `row_flags` keeps a done chunk's flags when some row failed.
CREATE TABLE job_chunks (
  job_id           TEXT NOT NULL REFERENCES jobs (id),
  chunk_index      INTEGER NOT NULL,
  first_row        INTEGER NOT NULL,
  row_count        INTEGER NOT NULL,
  cursor           INTEGER NOT NULL DEFAULT 0,
  status           TEXT NOT NULL DEFAULT 'pending',
  lease_owner      TEXT,
  lease_epoch      INTEGER NOT NULL DEFAULT 0,
  lease_expires_at BIGINT,
  attempts         INTEGER NOT NULL DEFAULT 0,
  failures         INTEGER NOT NULL DEFAULT 0,
  row_flags        BYTEA,
  pass             INTEGER NOT NULL DEFAULT 0,
  retry_wanted     INTEGER NOT NULL DEFAULT 0,
  pass_rows        INTEGER,
  PRIMARY KEY (job_id, chunk_index)
);
CREATE INDEX chunks_by_status ON job_chunks (status, job_id);

-- Rendered output of committed batches, until the chunk's part objects are written. `row_ends`
-- (one little-endian uint32 per row) with `row_flags` gives the found and errors parts; the
-- found_text and errors_text columns keep SQLite's shape and are written empty.
CREATE TABLE chunk_outputs (
  job_id      TEXT NOT NULL,
  chunk_index INTEGER NOT NULL,
  first_row   INTEGER NOT NULL,
  all_text    TEXT NOT NULL,
  found_text  TEXT NOT NULL,
  errors_text TEXT NOT NULL DEFAULT '',
  row_flags   BYTEA,
  row_ends    BYTEA,
  PRIMARY KEY (job_id, chunk_index, first_row)
);

-- Events written in the same transaction as the state change that causes them. `seq` keeps the
-- order they were queued in, which events of one millisecond would otherwise lose (ids are random).
CREATE TABLE outbox (
  seq        BIGINT GENERATED ALWAYS AS IDENTITY,
  id         TEXT PRIMARY KEY,
  event      TEXT NOT NULL,
  account_id TEXT,
  payload    TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  sent_at    BIGINT
);
-- The relay reads `WHERE sent_at IS NULL ORDER BY created_at`: sent events, nearly all of them, stay out of it.
CREATE INDEX outbox_unsent ON outbox (created_at, seq) WHERE sent_at IS NULL;
