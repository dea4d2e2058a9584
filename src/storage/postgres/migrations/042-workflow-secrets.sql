-- Workflow secrets (issue 34): see the SQLite migration 049. `value_sealed` is sealed under the
-- data key `key_name` (one per value), destroyed when the secret is deleted or replaced.
CREATE TABLE workflow_secrets (
  account_id   TEXT NOT NULL REFERENCES accounts (id),
  name         TEXT NOT NULL,
  value_sealed TEXT NOT NULL,
  key_name     TEXT NOT NULL,
  created_at   BIGINT NOT NULL,
  updated_at   BIGINT NOT NULL,
  PRIMARY KEY (account_id, name)
);
