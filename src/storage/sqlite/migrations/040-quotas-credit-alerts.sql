-- The size of a job's input file, for the stored-bytes quota (issue 27): counted from the store so
-- that every API process sees the same use. Jobs made before this count 0.
ALTER TABLE jobs ADD COLUMN input_bytes INTEGER NOT NULL DEFAULT 0;

-- The credit alert an account sets (issue 27, item 8): `credits.low` is sent once when its
-- available credits (balance less reservations) fall below `threshold`; `fired` is 1 from then
-- until they are back at or above it, so one crossing sends one event however many charges follow.
CREATE TABLE credit_alerts (
  account_id TEXT PRIMARY KEY REFERENCES accounts (id),
  threshold  INTEGER NOT NULL,
  fired      INTEGER NOT NULL DEFAULT 0,
  updated_at INTEGER NOT NULL
) WITHOUT ROWID;
