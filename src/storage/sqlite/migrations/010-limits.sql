-- Limits that every process on this data dir counts together (LimitsPort).

-- A slot is held while its row is live (`expires_at` not yet passed); a free slot has no row, or an
-- expired one that the next taker overwrites. The primary key is what stops two holders from
-- holding one slot: a taker writes the row only if it is absent or expired.
CREATE TABLE limit_slots (
  name       TEXT NOT NULL,
  slot       INTEGER NOT NULL,     -- 0..size-1
  holder     TEXT NOT NULL,
  expires_at INTEGER NOT NULL,     -- epoch ms
  PRIMARY KEY (name, slot)
) WITHOUT ROWID;
-- renewSlots moves every slot of one holder, whatever its name.
CREATE INDEX limit_slots_by_holder ON limit_slots (holder);

-- One small text value per name, changed only inside an IMMEDIATE transaction.
CREATE TABLE shared_records (
  name  TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
