-- A checkpoint batch's output keeps its `all` text and, per row, where the row ends in it (one
-- little-endian uint32 per row); with `row_flags`, that gives the `found` and `errors` parts without
-- storing their text a second time. Rows written before this migration have NULL here and their
-- `found_text` and `errors_text` filled in, and are read that way.
ALTER TABLE chunk_outputs ADD COLUMN row_ends BLOB;
