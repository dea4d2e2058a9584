-- As SQLite's migration 040: a job's input size, for the stored-bytes quota (issue 27).
ALTER TABLE jobs ADD COLUMN input_bytes BIGINT NOT NULL DEFAULT 0;

-- As SQLite's: the credit alert an account sets; `fired` from a crossing until it is undone.
CREATE TABLE credit_alerts (
  account_id TEXT PRIMARY KEY REFERENCES accounts (id),
  threshold  BIGINT NOT NULL,
  fired      BOOLEAN NOT NULL DEFAULT false,
  updated_at BIGINT NOT NULL
);
