-- Limits that every process and machine on this database counts together (LimitsPort), as SQLite's
-- migration 010 leaves them.

-- A slot is held while its row is live (`expires_at` not yet passed); a free slot has no row, or an
-- expired one that the next taker overwrites. The primary key is what stops two holders from
-- holding one slot: a taker writes the row only if it is absent or expired.
CREATE TABLE limit_slots (
  name       TEXT NOT NULL,
  slot       INTEGER NOT NULL,     -- 0..size-1
  holder     TEXT NOT NULL,
  expires_at BIGINT NOT NULL,      -- epoch ms
  PRIMARY KEY (name, slot)
);
-- renewSlots moves every slot of one holder, whatever its name.
CREATE INDEX limit_slots_by_holder ON limit_slots (holder);

-- One small text value per name. NULL is "no record": updateShared inserts a NULL row to have a
-- row to lock when the record does not exist yet, and deletes it again if the change stores
-- nothing, so a committed NULL never outlives its transaction. '' is a value like any other.
CREATE TABLE shared_records (
  name  TEXT PRIMARY KEY,
  value TEXT
);
