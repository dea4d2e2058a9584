-- Executing monitor runs (issue 20): the starting and comparing steps are leased like a job's phases,
-- so exactly one process does each and another takes it over when that one dies. A write of either
-- step carries lease_epoch in its WHERE, so a process that lost the lease changes nothing.
ALTER TABLE monitor_runs ADD COLUMN lease_owner TEXT;
ALTER TABLE monitor_runs ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE monitor_runs ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;
-- Result rows of the run's job compared and committed so far: where a resumed comparison goes on.
ALTER TABLE monitor_runs ADD COLUMN compare_cursor INTEGER NOT NULL DEFAULT 0;
-- High-value alerts found so far (src/monitors/high-value.ts says which changes are).
ALTER TABLE monitor_runs ADD COLUMN alerts_detected INTEGER NOT NULL DEFAULT 0;

-- A snapshot's high-value alert (JSON), NULL for most; the alert event reads them back in order.
ALTER TABLE monitor_snapshots ADD COLUMN alert TEXT;
CREATE INDEX monitor_snapshots_alerts ON monitor_snapshots (run_id, seq) WHERE alert IS NOT NULL;
