-- Schedule triggers (issue 34): when a scheduled workflow's next run is due, NULL for every other.
-- The scheduler moves it forward with a compare-and-set on the value it read, and a scheduled run's
-- id is a pure function of (workflow, due time), so one due time starts one run whatever number of
-- processes look at once.
ALTER TABLE workflows ADD COLUMN next_run_at BIGINT;
CREATE INDEX workflows_due ON workflows (next_run_at) WHERE next_run_at IS NOT NULL AND deleted_at IS NULL;

-- The public ingest URL (docs/workflows.md): only the SHA-256 of its token is kept, never the token.
-- A rotation keeps the previous hash working until ingest_prev_until, so senders can switch over.
ALTER TABLE workflows ADD COLUMN ingest_hash TEXT;
ALTER TABLE workflows ADD COLUMN ingest_prev_hash TEXT;
ALTER TABLE workflows ADD COLUMN ingest_prev_until BIGINT;
CREATE UNIQUE INDEX workflows_ingest ON workflows (ingest_hash) WHERE ingest_hash IS NOT NULL;
CREATE INDEX workflows_ingest_prev ON workflows (ingest_prev_hash) WHERE ingest_prev_hash IS NOT NULL;
