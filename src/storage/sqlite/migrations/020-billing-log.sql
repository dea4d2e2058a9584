-- New charges are appended to billing_log, and moved into billing_cache (the B-tree keyed by the
-- key's hash) many thousands at a time, sorted (src/storage/sqlite/sqlite-billing-index.ts).
-- Inserting each charge into billing_cache as it was made rewrote about one random page per key:
-- at 1,000,000 rows that was 30% of the engine's time. A charge is billed from the moment its
-- log row commits; every check reads both tables.
-- AUTOINCREMENT: a seq is never reused, even once the log has been emptied by a merge, so a process
-- that has read the log up to some seq can read on from it.
CREATE TABLE billing_log (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  account_seq INTEGER NOT NULL,
  kind        TEXT NOT NULL,
  key_hash    BLOB NOT NULL,
  charged_at  INTEGER NOT NULL,
  ledger_seq  INTEGER NOT NULL
);
-- How far the log has been merged into billing_cache: a process whose copy of the log predates a
-- merge reads the log again.
CREATE TABLE billing_merges (
  id             INTEGER PRIMARY KEY CHECK (id = 1),
  merged_through INTEGER NOT NULL
);
INSERT INTO billing_merges (id, merged_through) VALUES (1, 0);
