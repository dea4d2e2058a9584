-- A deleted job keeps its row, so that its ledger lines still name a job. `deleted_at` is written
-- before any object is removed and `purged_at` once they all are: a row with the first and not the
-- second is a deletion a crash interrupted, which the retention sweep finishes.
ALTER TABLE jobs ADD COLUMN deleted_at BIGINT, ADD COLUMN deleted_reason TEXT, ADD COLUMN purged_at BIGINT;
CREATE INDEX jobs_expiring ON jobs (finished_at, id) WHERE deleted_at IS NULL AND finished_at IS NOT NULL;
CREATE INDEX jobs_unpurged ON jobs (deleted_at, id) WHERE deleted_at IS NOT NULL AND purged_at IS NULL;
-- The purge reads old sent events and finished deliveries; without these it scans both tables.
CREATE INDEX outbox_sent ON outbox (sent_at) WHERE sent_at IS NOT NULL;
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (created_at) WHERE status <> 'pending';
-- A deleted job's input and chunks are gone: a resume or a retry of it would run on nothing.
-- The API and the CLI refuse first with job_deleted; this keeps any other path from doing it.
CREATE FUNCTION sluice_deleted_job_stays() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'job_deleted: job % was deleted and cannot change status', OLD.id;
END
$$;
CREATE TRIGGER jobs_deleted_stay BEFORE UPDATE OF status ON jobs
  FOR EACH ROW WHEN (OLD.deleted_at IS NOT NULL AND NEW.status IS DISTINCT FROM OLD.status)
  EXECUTE FUNCTION sluice_deleted_job_stays();
