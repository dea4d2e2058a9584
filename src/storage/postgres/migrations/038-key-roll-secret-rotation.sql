-- Rotation (issue 27, item 7), as SQLite's migration 045. A key may carry an end (`expires_at`,
-- epoch ms): chosen at creation, or set by a roll to the end of its grace period, after which the
-- key is refused like a disabled one. `replaced_by` names the key a roll made in its place.
ALTER TABLE api_keys ADD COLUMN expires_at BIGINT;
ALTER TABLE api_keys ADD COLUMN replaced_by TEXT;

-- A webhook's signing secret before its last rotation, sealed under a data key destroyed at the
-- end of the overlap (`previous_secret_until`): deliveries carry a signature with each secret
-- until then, and only the new one after.
ALTER TABLE webhooks ADD COLUMN previous_secret_sealed TEXT;
ALTER TABLE webhooks ADD COLUMN previous_secret_until BIGINT;
