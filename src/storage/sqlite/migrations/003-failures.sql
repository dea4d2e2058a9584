-- Retryable failures in a row, apart from `attempts` (every lease take): a chunk taken over after
-- crashes has many attempts but no failures, and must not be paused for them.
ALTER TABLE jobs ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_chunks ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
