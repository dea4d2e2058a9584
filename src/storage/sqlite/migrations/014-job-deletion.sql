-- A deleted job keeps its row, so that its ledger lines still name a job. `deleted_at` is written
-- before any object is removed and `purged_at` once they all are: a row with the first and not the
-- second is a deletion a crash interrupted, which the retention sweep finishes.
ALTER TABLE jobs ADD COLUMN deleted_at INTEGER;
ALTER TABLE jobs ADD COLUMN deleted_reason TEXT;
ALTER TABLE jobs ADD COLUMN purged_at INTEGER;
CREATE INDEX jobs_expiring ON jobs (finished_at) WHERE deleted_at IS NULL AND finished_at IS NOT NULL;
CREATE INDEX jobs_unpurged ON jobs (deleted_at) WHERE deleted_at IS NOT NULL AND purged_at IS NULL;
-- The purge reads old sent events and finished deliveries; without these it scans both tables.
CREATE INDEX outbox_sent ON outbox (sent_at) WHERE sent_at IS NOT NULL;
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (created_at) WHERE status != 'pending';
-- A deleted job's input and chunks are gone: a resume or a retry of it would run on nothing.
-- The API and the CLI refuse first with job_deleted; this keeps any other path from doing it.
CREATE TRIGGER jobs_deleted_stay BEFORE UPDATE OF status ON jobs
  WHEN OLD.deleted_at IS NOT NULL AND NEW.status IS NOT OLD.status
BEGIN
  SELECT RAISE(ABORT, 'job_deleted: a deleted job cannot change status');
END;
