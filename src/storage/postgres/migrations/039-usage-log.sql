-- The usage log (issue 27, item 9; spec 2.2), as SQLite's migration 046: one row per request made
-- with an API key, with the credits its answer reports and its response time; the route template
-- only, never a body, query string or secret.
CREATE TABLE usage_log (
  id          BIGSERIAL PRIMARY KEY,
  account_id  TEXT NOT NULL,
  at          BIGINT NOT NULL,
  key_id      TEXT NOT NULL,
  method      TEXT NOT NULL,
  route       TEXT NOT NULL,
  status      INTEGER NOT NULL,
  credits     INTEGER NOT NULL,
  duration_ms DOUBLE PRECISION NOT NULL,
  source_ip   TEXT
);
CREATE INDEX usage_log_by_account ON usage_log (account_id, id);
CREATE INDEX usage_log_by_time ON usage_log (at);
