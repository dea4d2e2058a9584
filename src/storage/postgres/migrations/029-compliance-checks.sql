-- Compliance verdicts (issue 29), as SQLite's migration 036: a row per account and address while
-- the verifier is still working; `result_id` in the answer is the row's id. Address as SHA-256 only.
CREATE TABLE compliance_checks (
  id BIGSERIAL PRIMARY KEY,
  account_id TEXT NOT NULL,
  key_hash TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  settled_at BIGINT,
  answer TEXT
);
CREATE INDEX compliance_checks_key ON compliance_checks (account_id, key_hash, created_at);
