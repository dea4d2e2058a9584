-- monitor_event triggers (issue 34): the monitor a workflow listens to, and the finish time of the
-- last of its runs the workflow has taken up. A sweep starts one workflow run per completed monitor
-- run with changes that finished after event_after, moving it forward with a compare-and-set, and
-- the workflow run's id is a pure function of (workflow, monitor run): one event, one run.
ALTER TABLE workflows ADD COLUMN monitor_id TEXT;
ALTER TABLE workflows ADD COLUMN event_after INTEGER;
CREATE INDEX workflows_by_monitor ON workflows (monitor_id) WHERE monitor_id IS NOT NULL AND deleted_at IS NULL;
