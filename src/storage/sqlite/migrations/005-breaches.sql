-- The phone breach index that `sluice import breaches` loads: one row per number and breach, so a
-- re-import of the same file adds nothing (the primary key) and one number's breaches are one
-- range of the key, read by a batch lookup without a separate index.
CREATE TABLE phone_breaches (
  phone       TEXT NOT NULL,            -- E.164, as the phone_breaches pipeline normalises it
  breach      TEXT NOT NULL,            -- the breach's name as the source gives it
  breached_at TEXT,                     -- ISO date (YYYY-MM-DD); NULL when the source has none
  PRIMARY KEY (phone, breach)
) WITHOUT ROWID;
