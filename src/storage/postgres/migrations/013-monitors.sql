-- Target lists, monitors, their targets, runs and snapshots: the same data as SQLite's migration
-- 019 leaves it (its comments say what each column is for). Times are epoch milliseconds (BIGINT).

CREATE TABLE target_lists (
  id              TEXT PRIMARY KEY,
  account_id      TEXT NOT NULL REFERENCES accounts (id),
  name            TEXT NOT NULL,
  type            TEXT NOT NULL CHECK (type IN ('email', 'phone', 'company')),
  status          TEXT NOT NULL CHECK (status IN ('importing', 'ready')),
  target_count    BIGINT NOT NULL DEFAULT 0,
  invalid_count   BIGINT NOT NULL DEFAULT 0,
  duplicate_count BIGINT NOT NULL DEFAULT 0,
  invalid_by_code TEXT NOT NULL DEFAULT '{}',
  source_key      TEXT,
  created_at      BIGINT NOT NULL
);
CREATE INDEX target_lists_by_account ON target_lists (account_id, type, created_at);

CREATE TABLE list_targets (
  list_id TEXT NOT NULL REFERENCES target_lists (id) ON DELETE CASCADE,
  target  TEXT NOT NULL,
  PRIMARY KEY (list_id, target)
);

CREATE TABLE monitors (
  id               TEXT PRIMARY KEY,
  account_id       TEXT NOT NULL REFERENCES accounts (id),
  name             TEXT NOT NULL,
  type             TEXT NOT NULL CHECK (type IN ('email', 'phone', 'company')),
  frequency        TEXT NOT NULL CHECK (frequency IN ('weekly', 'biweekly', 'monthly', 'quarterly')),
  tracked_fields   TEXT NOT NULL,
  change_detection TEXT NOT NULL CHECK (change_detection IN ('any_change', 'new_only')),
  status           TEXT NOT NULL CHECK (status IN ('active', 'paused')),
  schedule_anchor  BIGINT NOT NULL,
  next_run_at      BIGINT NOT NULL,
  last_run_at      BIGINT,
  target_count     BIGINT NOT NULL DEFAULT 0,
  created_at       BIGINT NOT NULL,
  updated_at       BIGINT NOT NULL
);
CREATE INDEX monitors_by_account ON monitors (account_id, created_at);
CREATE INDEX monitors_due ON monitors (status, next_run_at);

CREATE TABLE monitor_targets (
  monitor_id  TEXT NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
  target      TEXT NOT NULL,
  added_at    BIGINT NOT NULL,
  last_data   TEXT,
  last_run_id TEXT,
  PRIMARY KEY (monitor_id, target)
);

-- NULLs are distinct in a UNIQUE constraint (the default), so runs by hand (period_start NULL)
-- never collide; two runs of one scheduled period always do.
CREATE TABLE monitor_runs (
  id               TEXT PRIMARY KEY,
  monitor_id       TEXT NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
  account_id       TEXT NOT NULL,
  triggered_by     TEXT NOT NULL CHECK (triggered_by IN ('schedule', 'manual')),
  period_start     BIGINT,
  status           TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
  job_id           TEXT,
  total_records    BIGINT,
  changes_detected BIGINT,
  credits_used     BIGINT,
  started_at       BIGINT,
  finished_at      BIGINT,
  reason           TEXT,
  created_at       BIGINT NOT NULL,
  UNIQUE (monitor_id, period_start)
);
CREATE INDEX monitor_runs_by_monitor ON monitor_runs (monitor_id, created_at);
CREATE INDEX monitor_runs_by_account ON monitor_runs (account_id, created_at);
CREATE INDEX monitor_runs_by_status ON monitor_runs (status, created_at);

CREATE TABLE monitor_snapshots (
  run_id      TEXT NOT NULL REFERENCES monitor_runs (id) ON DELETE CASCADE,
  seq         BIGINT NOT NULL,
  target      TEXT NOT NULL,
  data        TEXT NOT NULL,
  changes     TEXT,
  has_changes BOOLEAN NOT NULL,
  PRIMARY KEY (run_id, seq)
);
CREATE INDEX monitor_snapshots_changed ON monitor_snapshots (run_id, has_changes, seq);
