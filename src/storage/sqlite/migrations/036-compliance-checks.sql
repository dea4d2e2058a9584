-- Compliance verdicts (issue 29): one row per account and address while the verifier is still
-- working, so that a repeat finds the settled verdict; `result_id` in the answer is the row's id.
-- The address is kept only as a SHA-256 hash: the row is found again, never read back as data.
CREATE TABLE compliance_checks (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id TEXT NOT NULL,
  key_hash TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  settled_at INTEGER,
  answer TEXT
);
CREATE INDEX compliance_checks_key ON compliance_checks (account_id, key_hash, created_at);
