-- The usage log (issue 27, item 9; spec 2.2): one row per request made with an API key, with the
-- credits its answer reports and its response time. No body, query string or secret: the route
-- template only. AUTOINCREMENT so that ids, the `before` cursor, are never reused after a purge.
CREATE TABLE usage_log (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id  TEXT NOT NULL,
  at          INTEGER NOT NULL,
  key_id      TEXT NOT NULL,
  method      TEXT NOT NULL,
  route       TEXT NOT NULL,
  status      INTEGER NOT NULL,
  credits     INTEGER NOT NULL,
  duration_ms REAL NOT NULL,
  source_ip   TEXT
);
-- A page of one account, and the per-account cut, read by id; the purge by age reads `at`.
CREATE INDEX usage_log_by_account ON usage_log (account_id, id);
CREATE INDEX usage_log_by_time ON usage_log (at);
