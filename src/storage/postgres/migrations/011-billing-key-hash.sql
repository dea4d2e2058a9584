-- The billing cache keeps no plain address or number: each key becomes the first 16 bytes of
-- HMAC-SHA256 under a key derived from the deployment's seal key (src/storage/billing-key.ts).
-- pgcrypto may be missing (the embedded server has none), and the key must never reach the
-- server, so the runner fills key_hash in TypeScript at the marker below, in batches of 10,000 by
-- primary key (pg-billing-key-migration.ts), after checking the seal key against the database's.
-- All of it runs in the runner's one transaction: a crash leaves the old table whole, and a row
-- left unfilled fails SET NOT NULL below instead of being dropped (a dropped row would make its
-- key billable again inside the window).
ALTER TABLE billing_cache ADD COLUMN key_hash BYTEA;
-- sluice:fill-billing-key-hashes
ALTER TABLE billing_cache ALTER COLUMN key_hash SET NOT NULL;
ALTER TABLE billing_cache DROP CONSTRAINT billing_cache_pkey;
ALTER TABLE billing_cache DROP COLUMN lookup_key;
ALTER TABLE billing_cache ADD PRIMARY KEY (account_seq, kind, key_hash);
