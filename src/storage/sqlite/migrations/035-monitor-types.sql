-- Monitors and target lists of every type spec 2.8 names (email, phone, company, domain, ip,
-- darkweb): the CHECK on `type` of `target_lists` and `monitors` is widened by
-- widenMonitorTypeChecks (open-database.ts) before this file runs. A CHECK constraint lives only in
-- the table's schema text, so SQLite's documented way to change one is to rewrite that text (with
-- writable_schema) and bump schema_version, which every other connection notices. Rebuilding the
-- tables instead would cascade-delete every monitor's targets, runs and snapshots (foreign keys
-- are on, and cannot be turned off inside the migration's transaction). Which types may actually
-- be created is still the application's MONITOR_TYPES.
SELECT 1;
