-- Code-host leak scans (spec 4.6): one row per scan, run as a job under a lease. The result holds
-- masked previews and fingerprints only, never a secret; the repository URL is the caller's.
CREATE TABLE repo_scans (
  id             TEXT PRIMARY KEY,
  account_id     TEXT NOT NULL,
  url            TEXT NOT NULL,
  type           INTEGER NOT NULL,
  config         TEXT NOT NULL,          -- JSON: the scan's config as echoed
  status         TEXT NOT NULL,          -- processing | completed | failed
  error_code     TEXT,
  result         TEXT,                   -- JSON: the finished scan's result
  lease_owner    TEXT,
  lease_expires  BIGINT,                 -- epoch ms
  lease_epoch    INTEGER NOT NULL DEFAULT 0,
  attempts       INTEGER NOT NULL DEFAULT 0,
  created_at     BIGINT NOT NULL,
  updated_at     BIGINT NOT NULL
);
-- Claims look for processing scans whose lease is free or expired.
CREATE INDEX repo_scans_open ON repo_scans (status, lease_expires);
CREATE INDEX repo_scans_by_account ON repo_scans (account_id, created_at);
