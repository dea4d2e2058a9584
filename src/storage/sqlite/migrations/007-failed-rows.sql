-- Failure budgets, the `errors` export and `sluice jobs retry-failed`.
-- Each checkpoint batch keeps its error rows' text beside `all` and `found`, and one byte per row
-- (bit 1 found, bit 2 error) so that a chunk's failed rows can be found and redone later.
ALTER TABLE chunk_outputs ADD COLUMN errors_text TEXT NOT NULL DEFAULT '';
ALTER TABLE chunk_outputs ADD COLUMN row_flags BLOB;
-- A finished chunk with error rows keeps those flags (NULL when it has none). `pass` is 0 for the
-- first run of a chunk and goes up by one for each retry of its failed rows; `retry_wanted` asks a
-- chunk still in its first run to retry its failed rows once that run is done.
ALTER TABLE job_chunks ADD COLUMN row_flags BLOB;
ALTER TABLE job_chunks ADD COLUMN pass INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_chunks ADD COLUMN retry_wanted INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN result_errors_key TEXT;
-- Rows a retry pass works through (its failed rows); NULL in the first pass, which does them all.
ALTER TABLE job_chunks ADD COLUMN pass_rows INTEGER;
