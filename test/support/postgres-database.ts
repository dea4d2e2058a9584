import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { migratePostgres, PgDatabase } from '../../src/storage/postgres/pg-database.js';

export interface FreshDatabase {
  /** URL of a new, empty database on the run's server. */
  url: string;
  /** Drops the database, ending any connections still open to it. Safe to call twice. */
  drop(): Promise<void>;
}

/** The run's server URL, '' when SLUICE_TEST_POSTGRES=off: `describe.skipIf(!postgresServerUrl())`. */
export function postgresServerUrl(): string {
  return inject('postgresUrl');
}

/**
 * A database of its own for one test or file, so that tests running in parallel on the one server
 * never see each other's tables. `prefix` shows in the name, to tell leftovers apart on an outside server.
 */
export async function freshDatabase(prefix = 'sluice_test', template?: string): Promise<FreshDatabase> {
  const serverUrl = postgresServerUrl();
  if (!serverUrl) throw new Error('PostgreSQL is off for this run (SLUICE_TEST_POSTGRES=off); skip tests that need it');
  // Lowercase letters, digits and _ only, starting with a letter, within the 63-byte identifier limit:
  // a name postgres never folds or truncates, so the quoted and the URL forms always agree.
  const safePrefix = prefix.toLowerCase().replace(/[^a-z0-9_]/g, '_').replace(/^[^a-z]*/, '').slice(0, 40) || 'db';
  const name = `${safePrefix}_${randomBytes(6).toString('hex')}`;
  await adminQuery(serverUrl, template === undefined ? `CREATE DATABASE "${name}"` : `CREATE DATABASE "${name}" TEMPLATE "${template}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  let dropped: Promise<void> | undefined;
  return {
    url: url.toString(),
    drop: () => (dropped ??= adminQuery(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)),
  };
}

/**
 * Like freshDatabase, but with every migration already applied: a copy of the run's template
 * (postgres-global-setup.ts), made in a fraction of the time migrating a new database takes. For
 * tests that open a store on it; a test of migrations themselves wants freshDatabase.
 */
export async function migratedDatabase(prefix = 'sluice_test'): Promise<FreshDatabase> {
  const template = inject('postgresTemplate');
  if (!template) return freshDatabase(prefix);
  return freshDatabase(prefix, template);
}

async function adminQuery(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * The databases and pools one test file opens, closed and dropped together:
 * `const pools = poolScope(); afterEach(() => pools.closeAll());`.
 */
export function poolScope() {
  const pools: PgDatabase[] = [];
  const databases: FreshDatabase[] = [];
  return {
    /** A migrated database of the test's own, and `count` independent pools on it, as separate processes would have. */
    async open(prefix: string, count: number): Promise<{ url: string; pools: PgDatabase[] }> {
      const database = this.database(await freshDatabase(prefix));
      const opened: PgDatabase[] = [];
      for (let i = 0; i < count; i++) {
        const db = this.pool(new PgDatabase({ url: database.url, poolSize: 6 }));
        if (i === 0) await migratePostgres(db);
        opened.push(db);
      }
      return { url: database.url, pools: opened };
    },
    /** A database the test made itself, dropped with the rest. */
    database(database: FreshDatabase): FreshDatabase {
      databases.push(database);
      return database;
    },
    /** A pool the test opened itself, closed with the rest. */
    pool(db: PgDatabase): PgDatabase {
      pools.push(db);
      return db;
    },
    async closeAll(): Promise<void> {
      await Promise.all(pools.splice(0).map((db) => db.close()));
      await Promise.all(databases.splice(0).map((d) => d.drop()));
    },
  };
}
