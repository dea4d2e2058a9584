-- Workflows (issue 34, docs/workflows.md). The workflow row holds the current version's definition;
-- every version, the first included, is also a row of workflow_versions that is never changed, so
-- a run pins (workflow_id, version) and finishes on the steps it started with.
CREATE TABLE workflows (
  id           TEXT PRIMARY KEY,
  account_id   TEXT NOT NULL,
  name         TEXT NOT NULL,
  description  TEXT NOT NULL DEFAULT '',
  status       TEXT NOT NULL CHECK (status IN ('active', 'paused', 'draft')),
  trigger      TEXT NOT NULL,            -- JSON
  steps        TEXT NOT NULL,            -- JSON array of {id, type, config}
  version      INTEGER NOT NULL,
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL,
  deleted_at   INTEGER
);
CREATE INDEX workflows_by_account ON workflows (account_id, created_at, id) WHERE deleted_at IS NULL;

CREATE TABLE workflow_versions (
  workflow_id  TEXT NOT NULL REFERENCES workflows (id),
  version      INTEGER NOT NULL,
  name         TEXT NOT NULL,
  description  TEXT NOT NULL,
  status       TEXT NOT NULL,
  trigger      TEXT NOT NULL,
  steps        TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  PRIMARY KEY (workflow_id, version)
);

-- A run advances one step per fenced commit: cursor is the next step's index, outputs the JSON of
-- every finished step's output by step id, wake_at the due time of a waiting delay or retry.
CREATE TABLE workflow_runs (
  id               TEXT PRIMARY KEY,
  account_id       TEXT NOT NULL,
  workflow_id      TEXT NOT NULL,
  workflow_version INTEGER NOT NULL,
  workflow_name    TEXT NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
  input            TEXT NOT NULL,
  outputs          TEXT NOT NULL DEFAULT '{}',
  cursor           INTEGER NOT NULL DEFAULT 0,
  attempts         INTEGER NOT NULL DEFAULT 0,
  wake_at          INTEGER,
  steps_total      INTEGER NOT NULL,
  steps_completed  INTEGER NOT NULL DEFAULT 0,
  credits_used     INTEGER NOT NULL DEFAULT 0,
  error_code       TEXT,
  error_message    TEXT,
  failed_step      TEXT,
  created_at       INTEGER NOT NULL,
  started_at       INTEGER,
  completed_at     INTEGER,
  lease_owner      TEXT,
  lease_epoch      INTEGER NOT NULL DEFAULT 0,
  lease_until      INTEGER NOT NULL DEFAULT 0,
  FOREIGN KEY (workflow_id, workflow_version) REFERENCES workflow_versions (workflow_id, version)
);
-- What claims scan: runs not ended, by when they may next be taken.
CREATE INDEX workflow_runs_due ON workflow_runs (lease_until, created_at) WHERE status IN ('queued', 'running');
CREATE INDEX workflow_runs_by_account ON workflow_runs (account_id, created_at);
CREATE INDEX workflow_runs_in_flight ON workflow_runs (account_id) WHERE status IN ('queued', 'running');

CREATE TABLE workflow_logs (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT,
  id           TEXT NOT NULL UNIQUE,
  run_id       TEXT NOT NULL REFERENCES workflow_runs (id),
  workflow_id  TEXT NOT NULL,
  step_id      TEXT,
  level        TEXT NOT NULL,
  message      TEXT NOT NULL,
  metadata     TEXT NOT NULL,
  created_at   INTEGER NOT NULL
);
CREATE INDEX workflow_logs_by_run ON workflow_logs (run_id, seq);
