-- Who did what to an account's keys, webhooks and logins (AuditPort), as SQLite's migration 011
-- leaves it. Never a secret or a password: actors and targets are ids and names only.

-- An identity is never reused, so ids stay a stable `before` cursor after purges.
CREATE TABLE audit_log (
  id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id  TEXT NOT NULL,
  at          BIGINT NOT NULL,
  action      TEXT NOT NULL,
  actor_type  TEXT NOT NULL,
  actor_id    TEXT,
  actor_name  TEXT,
  target_id   TEXT,
  source_ip   TEXT,
  user_agent  TEXT
);
-- Reading a page and purging by age or count are both scans of one account's entries by id.
CREATE INDEX audit_log_by_account ON audit_log (account_id, id);

-- Suspension now ends an account's sessions; those left by suspensions before this migration would
-- otherwise come back to life when their account is reinstated.
DELETE FROM sessions WHERE account_id IN (SELECT id FROM accounts WHERE status <> 'active');
