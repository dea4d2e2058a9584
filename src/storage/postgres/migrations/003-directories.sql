-- The phone breach index and the company directory that `sluice import` loads, in the shared store so
-- that one import serves every machine: the same data as SQLite's migrations 005 and 006 leave it.

-- One row per number and breach: a re-import of the same file adds nothing (the primary key), and
-- one number's breaches are one range of the key.
CREATE TABLE phone_breaches (
  phone       TEXT NOT NULL,            -- E.164, as the phone_breaches pipeline normalises it
  breach      TEXT NOT NULL,            -- the breach's name as the source gives it
  breached_at TEXT,                     -- ISO date (YYYY-MM-DD); NULL when the source has none
  PRIMARY KEY (phone, breach)
);

-- Trusted since PostgreSQL 13: a database owner without superuser may create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- A company is one row: upserted by its domain, or by its name key when it has no domain, so a
-- re-import of the same file adds nothing.
CREATE TABLE companies (
  id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name           TEXT NOT NULL,          -- as the source writes it (blanks collapsed)
  name_key       TEXT NOT NULL,          -- lower case: the exact-name match
  core_key       TEXT NOT NULL,          -- without legal form and punctuation (coreName): near matches and both indexes
  domain         TEXT UNIQUE,            -- lower-case host without scheme, www. or path; NULL when unknown
  description    TEXT,
  industry       TEXT,
  employee_count BIGINT,
  country        TEXT,
  website        TEXT,
  extra          TEXT                    -- JSON object of the source's further columns, or NULL
);
CREATE INDEX companies_by_name_key ON companies (name_key);
CREATE INDEX companies_by_core_key ON companies (core_key);
-- Without a domain, the name key is what makes a company the same company on the next import.
CREATE UNIQUE INDEX companies_without_domain ON companies (name_key) WHERE domain IS NULL;

-- Words: every word of a query, the last one as a prefix (SQLite: FTS5 unicode61). The 'simple'
-- configuration keeps every word and only lower-cases it; core_key is already folded by coreName
-- (accents stripped after NFKD), which leaves SQLite's remove_diacritics nothing to fold, so no
-- unaccent either: unaccent would also fold letters SQLite keeps apart (ø, ł, æ, ß, ...).
-- An expression index rather than a stored column: the vector is only needed to find rows.
CREATE INDEX companies_words ON companies USING gin (to_tsvector('simple', core_key));

-- Spelling (SQLite: FTS5 trigram): LIKE '%piece%' on the pieces of a misspelt name, as SQLite asks
-- its trigram index for them.
CREATE INDEX companies_trigrams ON companies USING gin (core_key gin_trgm_ops);
