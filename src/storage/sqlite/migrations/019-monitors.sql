-- Target lists, monitors, their targets, their runs and the runs' snapshots (issue 20). Times are
-- epoch milliseconds. Every row carries or reaches its account: every read is scoped by it.

-- A list of targets of one monitor type. An uploaded list is filled in batches while `importing`
-- (a million targets in one transaction would hold the single writer for seconds) and becomes
-- `ready` with its counts; only a ready list can seed a monitor. `source_key` is the uploaded CSV
-- in the object store, NULL for a list made from JSON.
CREATE TABLE target_lists (
  id              TEXT PRIMARY KEY,
  account_id      TEXT NOT NULL REFERENCES accounts (id),
  name            TEXT NOT NULL,
  type            TEXT NOT NULL CHECK (type IN ('email', 'phone', 'company')),
  status          TEXT NOT NULL CHECK (status IN ('importing', 'ready')),
  target_count    INTEGER NOT NULL DEFAULT 0,
  invalid_count   INTEGER NOT NULL DEFAULT 0,
  duplicate_count INTEGER NOT NULL DEFAULT 0,
  invalid_by_code TEXT NOT NULL DEFAULT '{}',   -- JSON object: error code -> rows
  source_key      TEXT,
  created_at      INTEGER NOT NULL
);
CREATE INDEX target_lists_by_account ON target_lists (account_id, type, created_at);

-- Targets are stored normalised (a lower-case email, an E.164 number, a company key), once per list.
CREATE TABLE list_targets (
  list_id TEXT NOT NULL REFERENCES target_lists (id) ON DELETE CASCADE,
  target  TEXT NOT NULL,
  PRIMARY KEY (list_id, target)
) WITHOUT ROWID;

-- The schedule lives in the row: periods start at schedule_anchor + n periods; next_run_at is the
-- next one to run. The scheduler claims a due monitor by moving next_run_at past now in the same
-- statement that checks it (compare-and-set), and monitor_runs' UNIQUE (monitor_id, period_start)
-- refuses a second run for one period whatever races past that.
CREATE TABLE monitors (
  id               TEXT PRIMARY KEY,
  account_id       TEXT NOT NULL REFERENCES accounts (id),
  name             TEXT NOT NULL,
  type             TEXT NOT NULL CHECK (type IN ('email', 'phone', 'company')),
  frequency        TEXT NOT NULL CHECK (frequency IN ('weekly', 'biweekly', 'monthly', 'quarterly')),
  tracked_fields   TEXT NOT NULL,               -- JSON array of field names
  change_detection TEXT NOT NULL CHECK (change_detection IN ('any_change', 'new_only')),
  status           TEXT NOT NULL CHECK (status IN ('active', 'paused')),
  schedule_anchor  INTEGER NOT NULL,
  next_run_at      INTEGER NOT NULL,
  last_run_at      INTEGER,
  target_count     INTEGER NOT NULL DEFAULT 0,
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL
);
CREATE INDEX monitors_by_account ON monitors (account_id, created_at);
-- The scheduler's one question: which active monitors are due.
CREATE INDEX monitors_due ON monitors (status, next_run_at);

-- A monitor's targets. last_data and last_run_id hold the target's result from the latest run that
-- looked it up: what the next run compares with. A run's checkpoint writes them together with its
-- snapshot rows, so a resumed run never compares a target with its own half-written result.
CREATE TABLE monitor_targets (
  monitor_id  TEXT NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
  target      TEXT NOT NULL,
  added_at    INTEGER NOT NULL,
  last_data   TEXT,                             -- JSON object of the tracked fields' values
  last_run_id TEXT,
  PRIMARY KEY (monitor_id, target)
) WITHOUT ROWID;

-- One row per run. period_start is the schedule period it is for (NULL for a run by hand); job_id
-- the engine job that carries it, once made; the stats are filled in as the run goes and ends.
-- Duration is finished_at - started_at.
CREATE TABLE monitor_runs (
  id               TEXT PRIMARY KEY,
  monitor_id       TEXT NOT NULL REFERENCES monitors (id) ON DELETE CASCADE,
  account_id       TEXT NOT NULL,
  triggered_by     TEXT NOT NULL CHECK (triggered_by IN ('schedule', 'manual')),
  period_start     INTEGER,
  status           TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
  job_id           TEXT,
  total_records    INTEGER,
  changes_detected INTEGER,
  credits_used     INTEGER,
  started_at       INTEGER,
  finished_at      INTEGER,
  reason           TEXT,
  created_at       INTEGER NOT NULL,
  UNIQUE (monitor_id, period_start)
);
CREATE INDEX monitor_runs_by_monitor ON monitor_runs (monitor_id, created_at);
CREATE INDEX monitor_runs_by_account ON monitor_runs (account_id, created_at);
CREATE INDEX monitor_runs_by_status ON monitor_runs (status, created_at);

-- Spec 2.8's snapshot: one row per run and target, in the run's input order (seq), so that a page
-- of results, changes_only and the CSV download read one order. changes is NULL when unchanged.
CREATE TABLE monitor_snapshots (
  run_id      TEXT NOT NULL REFERENCES monitor_runs (id) ON DELETE CASCADE,
  seq         INTEGER NOT NULL,
  target      TEXT NOT NULL,
  data        TEXT NOT NULL,
  changes     TEXT,
  has_changes INTEGER NOT NULL,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE INDEX monitor_snapshots_changed ON monitor_snapshots (run_id, has_changes, seq);
