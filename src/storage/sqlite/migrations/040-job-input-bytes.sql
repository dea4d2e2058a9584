-- The size of a job's input file, for the stored-bytes quota (issue 27): counted from the store so
-- that every API process sees the same use. Jobs made before this count 0.
ALTER TABLE jobs ADD COLUMN input_bytes INTEGER NOT NULL DEFAULT 0;
