-- Workflow secrets (issue 34): named values an account's webhook steps send by reference
-- ({{secrets.NAME}} in a header). `value_sealed` is sealed under the data key `key_name`, one per
-- value (a replace makes a new one): deleting or replacing a secret destroys its data key, so the
-- old bytes that SQLite keeps in free pages and the WAL open to nothing (docs/security.md).
CREATE TABLE workflow_secrets (
  account_id   TEXT NOT NULL REFERENCES accounts (id),
  name         TEXT NOT NULL,
  value_sealed TEXT NOT NULL,
  key_name     TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL,
  PRIMARY KEY (account_id, name)
) WITHOUT ROWID;
