-- Per-country counts of a job's phone numbers (JSON of PhoneCountryCounts), written by the split.
ALTER TABLE jobs ADD COLUMN countries TEXT;
