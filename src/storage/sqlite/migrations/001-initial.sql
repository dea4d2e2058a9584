-- Accounts hold the spendable balance; the CHECK is the last line of defence for "never below 0".
-- `seq` is a compact key for the hot billing table, where a 40-character id per row doubles the cost.
CREATE TABLE accounts (
  seq           INTEGER PRIMARY KEY,
  id            TEXT NOT NULL UNIQUE,
  email         TEXT UNIQUE,
  password_hash TEXT,
  credits       INTEGER NOT NULL CHECK (credits >= 0),
  status        TEXT NOT NULL DEFAULT 'active',
  created_at    INTEGER NOT NULL
);

-- Append-only. A charge line covers one checkpoint batch; its id is derived from (account, job,
-- chunk, first row), so a replayed batch collides on the primary key instead of charging again.
-- Which keys it paid for is in billing_cache (ledger_id).
CREATE TABLE ledger (
  id         TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  delta      INTEGER NOT NULL,
  reason     TEXT NOT NULL,
  kind       TEXT,
  job_id     TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX ledger_by_account ON ledger (account_id, created_at);
CREATE INDEX ledger_by_job ON ledger (job_id);

-- The repeat-free window: the last time an account paid for a key, and the ledger line that did.
CREATE TABLE billing_cache (
  account_seq INTEGER NOT NULL,
  kind        TEXT NOT NULL,
  lookup_key  TEXT NOT NULL,
  charged_at  INTEGER NOT NULL,
  ledger_id   TEXT NOT NULL,
  PRIMARY KEY (account_seq, kind, lookup_key)
) WITHOUT ROWID;

-- Answers shared by all accounts; a hit saves a provider call, not a charge.
CREATE TABLE result_cache (
  kind         TEXT NOT NULL,
  lookup_key   TEXT NOT NULL,
  result       TEXT NOT NULL,
  looked_up_at INTEGER NOT NULL,
  PRIMARY KEY (kind, lookup_key)
) WITHOUT ROWID;

-- Credits set aside by a chunk before its lookups, released in the checkpoint that settles them.
CREATE TABLE credit_reservations (
  job_id      TEXT NOT NULL,
  chunk_index INTEGER NOT NULL,
  account_id  TEXT NOT NULL,
  amount      INTEGER NOT NULL CHECK (amount >= 0),
  PRIMARY KEY (job_id, chunk_index)
) WITHOUT ROWID;
CREATE INDEX reservations_by_account ON credit_reservations (account_id);

CREATE TABLE jobs (
  id               TEXT PRIMARY KEY,
  account_id       TEXT NOT NULL REFERENCES accounts (id),
  type             TEXT NOT NULL,
  status           TEXT NOT NULL,
  phase            TEXT NOT NULL,
  reason           TEXT,
  error_message    TEXT,
  input_key        TEXT NOT NULL,
  input_name       TEXT,
  options          TEXT NOT NULL DEFAULT '{}',
  header           TEXT,
  key_column       INTEGER,
  total_rows       INTEGER,
  chunk_count      INTEGER,
  processed_rows   INTEGER NOT NULL DEFAULT 0,
  found_rows       INTEGER NOT NULL DEFAULT 0,
  invalid_rows     INTEGER NOT NULL DEFAULT 0,
  duplicate_rows   INTEGER NOT NULL DEFAULT 0,
  error_rows       INTEGER NOT NULL DEFAULT 0,
  credits_used     INTEGER NOT NULL DEFAULT 0,
  lease_owner      TEXT,
  lease_epoch      INTEGER NOT NULL DEFAULT 0,
  lease_expires_at INTEGER,
  attempts         INTEGER NOT NULL DEFAULT 0,
  result_all_key   TEXT,
  result_found_key TEXT,
  created_at       INTEGER NOT NULL,
  started_at       INTEGER,
  updated_at       INTEGER NOT NULL,
  finished_at      INTEGER
);
CREATE INDEX jobs_by_state ON jobs (status, phase, created_at);
CREATE INDEX jobs_by_account ON jobs (account_id, created_at);

-- A chunk is the unit of resume: `cursor` rows of it are committed, the rest are redone.
-- `lease_epoch` is the fencing token: a commit names the epoch it holds and is refused if stale.
CREATE TABLE job_chunks (
  job_id           TEXT NOT NULL REFERENCES jobs (id),
  chunk_index      INTEGER NOT NULL,
  first_row        INTEGER NOT NULL,
  row_count        INTEGER NOT NULL,
  cursor           INTEGER NOT NULL DEFAULT 0,
  status           TEXT NOT NULL DEFAULT 'pending',
  lease_owner      TEXT,
  lease_epoch      INTEGER NOT NULL DEFAULT 0,
  lease_expires_at INTEGER,
  attempts         INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (job_id, chunk_index)
) WITHOUT ROWID;
CREATE INDEX chunks_by_status ON job_chunks (status, job_id);

-- Rendered output of committed batches, until the chunk's part objects are written.
CREATE TABLE chunk_outputs (
  job_id      TEXT NOT NULL,
  chunk_index INTEGER NOT NULL,
  first_row   INTEGER NOT NULL,
  all_text    TEXT NOT NULL,
  found_text  TEXT NOT NULL,
  PRIMARY KEY (job_id, chunk_index, first_row)
) WITHOUT ROWID;

-- Events written in the same transaction as the state change that causes them.
CREATE TABLE outbox (
  id         TEXT PRIMARY KEY,
  event      TEXT NOT NULL,
  account_id TEXT,
  payload    TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  sent_at    INTEGER
);
CREATE INDEX outbox_unsent ON outbox (sent_at, created_at);
