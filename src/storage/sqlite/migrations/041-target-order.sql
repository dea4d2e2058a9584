-- Targets keep the order they were given in (issue 33): a monitor's run reads its targets, and so
-- its results and their CSV download, in the list's order instead of sorted by address. `position`
-- is 1, 2, 3... within a list or monitor in the order targets arrived; a duplicate keeps its first
-- position, a target added later goes after the others. Positions need not be contiguous (removed
-- targets leave gaps); readers order by (position, target).
ALTER TABLE list_targets ADD COLUMN position INTEGER NOT NULL DEFAULT 0;
ALTER TABLE monitor_targets ADD COLUMN position INTEGER NOT NULL DEFAULT 0;

-- Existing data gets a deterministic order: a list's targets by address (the order nothing else
-- recorded), a monitor's by when they were added, then by address, so the targets added by hand
-- after a list stay after it.
UPDATE list_targets SET position = r.n
  FROM (SELECT list_id, target, row_number() OVER (PARTITION BY list_id ORDER BY target) AS n FROM list_targets) AS r
 WHERE r.list_id = list_targets.list_id AND r.target = list_targets.target;
UPDATE monitor_targets SET position = r.n
  FROM (SELECT monitor_id, target, row_number() OVER (PARTITION BY monitor_id ORDER BY added_at, target) AS n FROM monitor_targets) AS r
 WHERE r.monitor_id = monitor_targets.monitor_id AND r.target = monitor_targets.target;

CREATE INDEX list_targets_in_order ON list_targets (list_id, position, target);
CREATE INDEX monitor_targets_in_order ON monitor_targets (monitor_id, position, target);
