-- Each billing-cache row named the ledger line that paid for it by that line's 44-character id,
-- which made the row about twice its size: a first run writes one row per new key into a random
-- leaf of this B-tree, so the bigger the rows, the more pages each batch dirties. Ledger lines now
-- have a stable integer key, `seq` (an INTEGER PRIMARY KEY, which VACUUM never renumbers, unlike a
-- plain rowid), and billing rows keep that instead. Ids stay as they were, unique, so a replayed
-- batch still collides on its line's id instead of charging again.
CREATE TABLE ledger_by_seq (
  seq        INTEGER PRIMARY KEY,
  id         TEXT NOT NULL UNIQUE,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  delta      INTEGER NOT NULL,
  reason     TEXT NOT NULL,
  kind       TEXT,
  job_id     TEXT,
  created_at INTEGER NOT NULL
);
INSERT INTO ledger_by_seq (id, account_id, delta, reason, kind, job_id, created_at)
  SELECT id, account_id, delta, reason, kind, job_id, created_at FROM ledger ORDER BY rowid;
DROP TABLE ledger;
ALTER TABLE ledger_by_seq RENAME TO ledger;
CREATE INDEX ledger_by_account ON ledger (account_id, created_at);
CREATE INDEX ledger_by_job ON ledger (job_id);

-- Every billing row is kept, even one whose ledger line were missing (seq 0 then, matching no
-- line): dropping it would make its key billable again inside the window.
CREATE TABLE billing_cache_by_seq (
  account_seq INTEGER NOT NULL,
  kind        TEXT NOT NULL,
  lookup_key  TEXT NOT NULL,
  charged_at  INTEGER NOT NULL,
  ledger_seq  INTEGER NOT NULL,
  PRIMARY KEY (account_seq, kind, lookup_key)
) WITHOUT ROWID;
INSERT INTO billing_cache_by_seq (account_seq, kind, lookup_key, charged_at, ledger_seq)
  SELECT b.account_seq, b.kind, b.lookup_key, b.charged_at, COALESCE(l.seq, 0)
  FROM billing_cache b LEFT JOIN ledger l ON l.id = b.ledger_id;
DROP TABLE billing_cache;
ALTER TABLE billing_cache_by_seq RENAME TO billing_cache;
