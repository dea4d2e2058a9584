-- The IP network data, the same generations as SQLite's migration 026: every row belongs to one
-- generation of one source, `ip_sources` names each source's current one, and an import flips it
-- in one transaction. Prefixes are `cidr` with a GiST index (`prefix >>= address` finds every
-- covering prefix); the RIR ranges, which need not be CIDR-aligned, keep fixed-width bytea keys.
CREATE TABLE ip_sources (
  source      TEXT PRIMARY KEY,
  generation  BIGINT NOT NULL,
  data_as_of  TEXT NOT NULL,
  imported_at BIGINT NOT NULL,
  rows        BIGINT NOT NULL
);

CREATE TABLE ip_imports (
  generation BIGSERIAL PRIMARY KEY,
  source     TEXT NOT NULL,
  started_at BIGINT NOT NULL
);

CREATE TABLE ip_ranges (
  id           BIGSERIAL PRIMARY KEY,
  generation   BIGINT NOT NULL,
  family       SMALLINT NOT NULL,
  start_key    BYTEA NOT NULL,
  end_key      BYTEA NOT NULL,
  registry     TEXT NOT NULL,
  cc           TEXT,
  allocated_at TEXT,
  status       TEXT NOT NULL,
  opaque_id    TEXT
);
CREATE INDEX ip_ranges_generation ON ip_ranges (generation, id);
CREATE INDEX ip_ranges_key ON ip_ranges (generation, family, start_key);

CREATE TABLE ip_rir_asns (
  id         BIGSERIAL PRIMARY KEY,
  generation BIGINT NOT NULL,
  first_asn  BIGINT NOT NULL,
  count      BIGINT NOT NULL,
  registry   TEXT NOT NULL,
  opaque_id  TEXT NOT NULL
);
CREATE INDEX ip_rir_asns_generation ON ip_rir_asns (generation, id);

CREATE TABLE ip_prefixes (
  id         BIGSERIAL PRIMARY KEY,
  generation BIGINT NOT NULL,
  prefix     CIDR NOT NULL,
  origins    TEXT NOT NULL
);
CREATE INDEX ip_prefixes_generation ON ip_prefixes (generation, id);
CREATE INDEX ip_prefixes_gist ON ip_prefixes USING gist (prefix inet_ops);

CREATE TABLE ip_as_names (
  id         BIGSERIAL UNIQUE,
  generation BIGINT NOT NULL,
  asn        BIGINT NOT NULL,
  name       TEXT NOT NULL,
  org_id     TEXT,
  country    TEXT,
  PRIMARY KEY (generation, asn)
);

CREATE TABLE ip_as_orgs (
  id         BIGSERIAL UNIQUE,
  generation BIGINT NOT NULL,
  org_id     TEXT NOT NULL,
  name       TEXT NOT NULL,
  country    TEXT,
  PRIMARY KEY (generation, org_id)
);

CREATE TABLE ip_as_relationships (
  id         BIGSERIAL UNIQUE,
  generation BIGINT NOT NULL,
  a          BIGINT NOT NULL,
  b          BIGINT NOT NULL,
  rel        SMALLINT NOT NULL,
  PRIMARY KEY (generation, a, b)
);
CREATE INDEX ip_as_names_generation ON ip_as_names (generation, id);
CREATE INDEX ip_as_orgs_generation ON ip_as_orgs (generation, id);
CREATE INDEX ip_as_relationships_generation ON ip_as_relationships (generation, id);
