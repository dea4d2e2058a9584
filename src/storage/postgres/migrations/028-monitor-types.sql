-- Monitors and target lists of every type spec 2.8 names, as SQLite's migration 035: the CHECK on
-- `type` is widened; which types may actually be created is still the application's MONITOR_TYPES.
ALTER TABLE target_lists DROP CONSTRAINT target_lists_type_check;
ALTER TABLE target_lists ADD CONSTRAINT target_lists_type_check CHECK (type IN ('email', 'phone', 'company', 'domain', 'ip', 'darkweb'));
ALTER TABLE monitors DROP CONSTRAINT monitors_type_check;
ALTER TABLE monitors ADD CONSTRAINT monitors_type_check CHECK (type IN ('email', 'phone', 'company', 'domain', 'ip', 'darkweb'));
