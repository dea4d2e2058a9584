-- The IP network data that `sluice import rir|pfx2as|asnames|asrel` load. Every row belongs to one
-- generation of one source; `ip_sources` names each source's current generation. An import writes
-- a new generation beside the current one and flips the pointer in one transaction, so a lookup
-- reads either the old data or the new, never half of an import; rows of a generation that never
-- became current (a killed import) are deleted by the next import of that source.
CREATE TABLE ip_sources (
  source      TEXT PRIMARY KEY,          -- rir | asnames | asrel | pfx2as:YYYY-MM-DD (one per dated snapshot)
  generation  INTEGER NOT NULL,
  data_as_of  TEXT NOT NULL,             -- YYYY-MM-DD: the date the data describes, not the import's
  imported_at INTEGER NOT NULL,          -- epoch ms
  rows        INTEGER NOT NULL
);

-- Hands out generations; a row lives while its import runs, so a stale one names a killed import.
CREATE TABLE ip_imports (
  generation INTEGER PRIMARY KEY AUTOINCREMENT,
  source     TEXT NOT NULL,
  started_at INTEGER NOT NULL
);

-- RIR delegations. Fixed-width big-endian keys (4 bytes IPv4, 16 bytes IPv6) compare as numbers,
-- so `start_key <= ? AND end_key >= ?` within a family is a range scan of the index.
CREATE TABLE ip_ranges (
  generation   INTEGER NOT NULL,
  family       INTEGER NOT NULL,         -- 4 or 6
  start_key    BLOB NOT NULL,
  end_key      BLOB NOT NULL,
  registry     TEXT NOT NULL,            -- afrinic, apnic, arin, lacnic, ripencc
  cc           TEXT,                     -- ISO 3166-1 alpha-2, NULL when the registry gives none
  allocated_at TEXT,                     -- YYYY-MM-DD, NULL when the registry gives none
  status       TEXT NOT NULL,            -- allocated | assigned
  opaque_id    TEXT                      -- the holder's handle in the registry (delegated-extended)
);
CREATE INDEX ip_ranges_generation ON ip_ranges (generation);
CREATE INDEX ip_ranges_key ON ip_ranges (generation, family, start_key);

-- AS numbers of the same RIR files: the opaque id links an address block to its holder's ASNs.
CREATE TABLE ip_rir_asns (
  generation INTEGER NOT NULL,
  first_asn  INTEGER NOT NULL,
  count      INTEGER NOT NULL,
  registry   TEXT NOT NULL,
  opaque_id  TEXT NOT NULL
);
CREATE INDEX ip_rir_asns_generation ON ip_rir_asns (generation);

-- pfx2as snapshots: one prefix per row, `origins` as RouteViews writes it (`_` multi-origin,
-- `,` AS set). A prefix is one point of the key: its network key and its length.
CREATE TABLE ip_prefixes (
  generation INTEGER NOT NULL,
  family     INTEGER NOT NULL,
  start_key  BLOB NOT NULL,
  length     INTEGER NOT NULL,
  origins    TEXT NOT NULL
);
CREATE INDEX ip_prefixes_generation ON ip_prefixes (generation);
CREATE INDEX ip_prefixes_key ON ip_prefixes (generation, family, start_key, length);

CREATE TABLE ip_as_names (
  generation INTEGER NOT NULL,
  asn        INTEGER NOT NULL,
  name       TEXT NOT NULL,
  org_id     TEXT,                       -- CAIDA as2org's organisation, NULL in the simple format
  country    TEXT,
  PRIMARY KEY (generation, asn)
);

CREATE TABLE ip_as_orgs (
  generation INTEGER NOT NULL,
  org_id     TEXT NOT NULL,
  name       TEXT NOT NULL,
  country    TEXT,
  PRIMARY KEY (generation, org_id)
);

-- CAIDA as-rel: rel -1 is `a` provider of `b`, 0 peers.
CREATE TABLE ip_as_relationships (
  generation INTEGER NOT NULL,
  a          INTEGER NOT NULL,
  b          INTEGER NOT NULL,
  rel        INTEGER NOT NULL,
  PRIMARY KEY (generation, a, b)
);
