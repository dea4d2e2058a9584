import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BillingKeys } from '../../src/storage/billing-key.js';
import { migrate, registerBillingHash } from '../../src/storage/sqlite/open-database.js';
import { migratedDatabase, postgresServerUrl, type FreshDatabase } from '../support/postgres-database.js';

/**
 * The two adapters' schemas stay in step: after every migration, SQLite and PostgreSQL have the
 * same tables with the same columns, but for the differences listed here, each with its reason.
 * A migration added to one adapter only fails this test, and so does a difference that is gone
 * while still listed, so the list never says more than is true.
 */
const KNOWN_DIFFERENCES: Record<string, string> = {
  'table billing_log only on sqlite': "SQLite's append-only charge log (its migration 020); PostgreSQL checks billing_cache with key_hash = ANY($n)",
  'table billing_merges only on sqlite': "the merge marks of SQLite's charge log into billing_cache",
  'table companies_trigrams* only on sqlite': "FTS5 index of company names by trigram, with FTS5's own shadow tables; PostgreSQL indexes the names with pg_trgm",
  'table companies_words* only on sqlite': 'FTS5 index of company names by word, with its shadow tables; PostgreSQL uses a tsvector index',
  'ip_prefixes: sqlite family, length, start_key; postgres id, prefix': 'PostgreSQL stores a prefix as CIDR, SQLite as family, length and the first address as a sortable key',
  'ip_ranges: postgres id': 'a BIGSERIAL key on PostgreSQL where SQLite has its rowid',
  'ip_as_names: postgres id': 'a BIGSERIAL key on PostgreSQL where SQLite has its rowid',
  'ip_as_orgs: postgres id': 'a BIGSERIAL key on PostgreSQL where SQLite has its rowid',
  'ip_as_relationships: postgres id': 'a BIGSERIAL key on PostgreSQL where SQLite has its rowid',
  'ip_rir_asns: postgres id': 'a BIGSERIAL key on PostgreSQL where SQLite has its rowid',
  'outbox: postgres seq': 'the order events were written in: an identity column on PostgreSQL, the rowid on SQLite',
  'webhook_deliveries: postgres seq': 'the order deliveries were made in: an identity column on PostgreSQL, the rowid on SQLite',
};

/** Table name to its column names, sorted. */
type Schema = Map<string, string[]>;

function sqliteSchema(): Schema {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-parity-'));
  const db = new Database(path.join(dir, 'sluice.db'));
  try {
    registerBillingHash(db, new BillingKeys(Buffer.alloc(32, 7)));
    migrate(db);
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as { name: string }[];
    return new Map(tables.map(({ name }) => [name, (db.prepare('SELECT name FROM pragma_table_info(?)').all(name) as { name: string }[]).map((c) => c.name).sort()]));
  } finally {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function postgresSchema(url: string): Promise<Schema> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ table_name: string; column_name: string }>(
      `SELECT c.table_name, c.column_name FROM information_schema.columns c
         JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
        WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'`,
    );
    const schema: Schema = new Map();
    for (const r of rows) schema.set(r.table_name, [...(schema.get(r.table_name) ?? []), r.column_name].sort());
    return schema;
  } finally {
    await client.end();
  }
}

/** The differences in the words of KNOWN_DIFFERENCES; an FTS5 index and its shadow tables count once. */
function differences(sqlite: Schema, postgres: Schema): string[] {
  const found = new Set<string>();
  for (const table of new Set([...sqlite.keys(), ...postgres.keys()])) {
    const [s, p] = [sqlite.get(table), postgres.get(table)];
    const fts = /^(companies_(?:trigrams|words))(?:_(?:config|data|docsize|idx|content))?$/.exec(table);
    if (!p) found.add(`table ${fts ? `${fts[1]}*` : table} only on sqlite`);
    else if (!s) found.add(`table ${table} only on postgres`);
    else {
      const onlySqlite = s.filter((c) => !p.includes(c));
      const onlyPostgres = p.filter((c) => !s.includes(c));
      const sides = [onlySqlite.length ? `sqlite ${onlySqlite.join(', ')}` : '', onlyPostgres.length ? `postgres ${onlyPostgres.join(', ')}` : ''].filter(Boolean);
      if (sides.length) found.add(`${table}: ${sides.join('; ')}`);
    }
  }
  return [...found].sort();
}

describe.skipIf(!postgresServerUrl())('the SQLite and PostgreSQL schemas, fully migrated', () => {
  let database: FreshDatabase;
  beforeAll(async () => {
    database = await migratedDatabase('schema_parity');
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('have the same tables and columns but for the differences listed with their reasons', async () => {
    const sqlite = sqliteSchema();
    const postgres = await postgresSchema(database.url);
    // A schema read wrong would compare two empty maps: both hold the tables every store has.
    for (const schema of [sqlite, postgres]) for (const table of ['jobs', 'accounts', 'billing_cache', 'outbox']) expect(schema.has(table), table).toBe(true);
    expect(sqlite.get('jobs')).toEqual(postgres.get('jobs'));
    expect(differences(sqlite, postgres)).toEqual(Object.keys(KNOWN_DIFFERENCES).sort());
  });

  it('tells a column added on one side only', () => {
    const base: Schema = new Map([['jobs', ['id', 'status']]]);
    expect(differences(new Map([['jobs', ['id', 'note', 'status']]]), base)).toEqual(['jobs: sqlite note']);
    expect(differences(base, new Map([['jobs', ['id', 'status']], ['extra', ['id']]]))).toEqual(['table extra only on postgres']);
  });
});
