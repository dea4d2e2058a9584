-- Executing monitor runs (issue 20), as SQLite's migration 021: leased start and compare steps,
-- the comparison's cursor, the alerts count, and a snapshot's high-value alert.
ALTER TABLE monitor_runs ADD COLUMN lease_owner TEXT;
ALTER TABLE monitor_runs ADD COLUMN lease_epoch BIGINT NOT NULL DEFAULT 0;
ALTER TABLE monitor_runs ADD COLUMN lease_until BIGINT NOT NULL DEFAULT 0;
ALTER TABLE monitor_runs ADD COLUMN compare_cursor BIGINT NOT NULL DEFAULT 0;
ALTER TABLE monitor_runs ADD COLUMN alerts_detected BIGINT NOT NULL DEFAULT 0;

ALTER TABLE monitor_snapshots ADD COLUMN alert TEXT;
CREATE INDEX monitor_snapshots_alerts ON monitor_snapshots (run_id, seq) WHERE alert IS NOT NULL;
