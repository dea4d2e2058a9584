-- The billing cache keeps no plain address or number: each key becomes the first 16 bytes of
-- HMAC-SHA256 under a key derived from the deployment's seal key (src/storage/billing-key.ts),
-- enough to answer "did this account pay for this key", and smaller than most keys. The function
-- is the adapter's own, registered on the connection before migrations run (open-database.ts),
-- after the seal key was checked against the database's: hashing with another key would make every
-- paid key read as unpaid.
-- Every row is carried over in this one transaction: a lost row would make its key billable again
-- inside the window. Two plain keys cannot become one hash in practice (128 bits), and if they did
-- the primary key would fail the migration rather than drop a row.
CREATE TABLE billing_cache_hashed (
  account_seq INTEGER NOT NULL,
  kind        TEXT NOT NULL,
  key_hash    BLOB NOT NULL,
  charged_at  INTEGER NOT NULL,
  ledger_seq  INTEGER NOT NULL,
  PRIMARY KEY (account_seq, kind, key_hash)
) WITHOUT ROWID;
INSERT INTO billing_cache_hashed (account_seq, kind, key_hash, charged_at, ledger_seq)
  SELECT account_seq, kind, sluice_billing_hash(kind, lookup_key), charged_at, ledger_seq FROM billing_cache;
DROP TABLE billing_cache;
ALTER TABLE billing_cache_hashed RENAME TO billing_cache;
