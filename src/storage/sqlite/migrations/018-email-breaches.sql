-- The email breach index that `sluice import breaches` loads from files with an `email` column: one
-- row per address and breach, so a re-import of the same file adds nothing (the primary key), a new
-- breach of a known address adds a row, and one address's breaches are one range of the key.
CREATE TABLE email_breaches (
  email        TEXT NOT NULL,           -- lower case, as the email pipelines normalise it
  breach       TEXT NOT NULL,           -- the breach's name as the source gives it
  breached_at  TEXT,                    -- ISO date (YYYY-MM-DD); NULL when the source has none
  data_classes TEXT NOT NULL DEFAULT '', -- exposed data, `;`-joined as imported; '' when none given
  PRIMARY KEY (email, breach)
) WITHOUT ROWID;
