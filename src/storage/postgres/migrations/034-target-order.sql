-- Targets keep the order they were given in, as SQLite's migration 041: `position` is 1, 2, 3...
-- within a list or monitor in arrival order (gaps allowed); readers order by (position, target).
ALTER TABLE list_targets ADD COLUMN position INTEGER NOT NULL DEFAULT 0;
ALTER TABLE monitor_targets ADD COLUMN position INTEGER NOT NULL DEFAULT 0;

-- Existing data: a list's targets by address, a monitor's by when they were added, then by address
-- (byte order, as the store sorted them before).
UPDATE list_targets SET position = r.n
  FROM (SELECT list_id, target, row_number() OVER (PARTITION BY list_id ORDER BY target COLLATE "C") AS n FROM list_targets) AS r
 WHERE r.list_id = list_targets.list_id AND r.target = list_targets.target;
UPDATE monitor_targets SET position = r.n
  FROM (SELECT monitor_id, target, row_number() OVER (PARTITION BY monitor_id ORDER BY added_at, target COLLATE "C") AS n FROM monitor_targets) AS r
 WHERE r.monitor_id = monitor_targets.monitor_id AND r.target = monitor_targets.target;

CREATE INDEX list_targets_in_order ON list_targets (list_id, position, target);
CREATE INDEX monitor_targets_in_order ON monitor_targets (monitor_id, position, target);
