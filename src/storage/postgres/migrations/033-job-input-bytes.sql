-- As SQLite's migration 040: a job's input size, for the stored-bytes quota (issue 27).
ALTER TABLE jobs ADD COLUMN input_bytes BIGINT NOT NULL DEFAULT 0;
