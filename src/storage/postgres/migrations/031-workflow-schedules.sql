-- Schedule triggers (issue 34): when a scheduled workflow's next run is due, NULL for every other.
-- The scheduler moves it forward with a compare-and-set on the value it read, and a scheduled run's
-- id is a pure function of (workflow, due time), so one due time starts one run whatever number of
-- processes look at once.
ALTER TABLE workflows ADD COLUMN next_run_at BIGINT;
CREATE INDEX workflows_due ON workflows (next_run_at) WHERE next_run_at IS NOT NULL AND deleted_at IS NULL;
