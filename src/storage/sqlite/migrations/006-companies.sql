-- The company directory that `sluice import companies` loads and `company` lookups answer from.
-- A company is one row: upserted by its domain, or by its name key when it has no domain, so a
-- re-import of the same file adds nothing.
CREATE TABLE companies (
  id             INTEGER PRIMARY KEY,
  name           TEXT NOT NULL,          -- as the source writes it (blanks collapsed)
  name_key       TEXT NOT NULL,          -- lower case: the exact-name match
  core_key       TEXT NOT NULL,          -- without legal form and punctuation (coreName): near matches and both indexes
  domain         TEXT UNIQUE,            -- lower-case host without scheme, www. or path; NULL when unknown
  description    TEXT,
  industry       TEXT,
  employee_count INTEGER,
  country        TEXT,
  website        TEXT,
  extra          TEXT                    -- JSON object of the source's further columns, or NULL
);
CREATE INDEX companies_by_name_key ON companies (name_key);
CREATE INDEX companies_by_core_key ON companies (core_key);
-- Without a domain, the name key is what makes a company the same company on the next import.
CREATE UNIQUE INDEX companies_without_domain ON companies (name_key) WHERE domain IS NULL;

-- Two external-content indexes over core_key, kept in step by the triggers below: words (all
-- words of a query, the last one as a prefix) and trigrams (spelling mistakes). Neither stores
-- the text again.
CREATE VIRTUAL TABLE companies_words USING fts5 (core_key, content = 'companies', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE companies_trigrams USING fts5 (core_key, content = 'companies', content_rowid = 'id', tokenize = 'trigram');

CREATE TRIGGER companies_indexed AFTER INSERT ON companies BEGIN
  INSERT INTO companies_words (rowid, core_key) VALUES (new.id, new.core_key);
  INSERT INTO companies_trigrams (rowid, core_key) VALUES (new.id, new.core_key);
END;
CREATE TRIGGER companies_unindexed AFTER DELETE ON companies BEGIN
  INSERT INTO companies_words (companies_words, rowid, core_key) VALUES ('delete', old.id, old.core_key);
  INSERT INTO companies_trigrams (companies_trigrams, rowid, core_key) VALUES ('delete', old.id, old.core_key);
END;
CREATE TRIGGER companies_reindexed AFTER UPDATE OF core_key ON companies WHEN old.core_key IS NOT new.core_key BEGIN
  INSERT INTO companies_words (companies_words, rowid, core_key) VALUES ('delete', old.id, old.core_key);
  INSERT INTO companies_trigrams (companies_trigrams, rowid, core_key) VALUES ('delete', old.id, old.core_key);
  INSERT INTO companies_words (rowid, core_key) VALUES (new.id, new.core_key);
  INSERT INTO companies_trigrams (rowid, core_key) VALUES (new.id, new.core_key);
END;
