-- A caller's own label for an entry (the `source` of an exposed-credential scan, spec 4.6: "appears
-- in activity history"). Free text the caller chose, never a secret: the scan's content is not kept.
ALTER TABLE audit_log ADD COLUMN label TEXT;
