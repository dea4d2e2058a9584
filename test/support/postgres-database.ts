import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';

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
export async function freshDatabase(prefix = 'sluice_test'): Promise<FreshDatabase> {
  const serverUrl = postgresServerUrl();
  if (!serverUrl) throw new Error('PostgreSQL is off for this run (SLUICE_TEST_POSTGRES=off); skip tests that need it');
  // Lowercase letters, digits and _ only, starting with a letter, within the 63-byte identifier limit:
  // a name postgres never folds or truncates, so the quoted and the URL forms always agree.
  const safePrefix = prefix.toLowerCase().replace(/[^a-z0-9_]/g, '_').replace(/^[^a-z]*/, '').slice(0, 40) || 'db';
  const name = `${safePrefix}_${randomBytes(6).toString('hex')}`;
  await adminQuery(serverUrl, `CREATE DATABASE "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  let dropped: Promise<void> | undefined;
  return {
    url: url.toString(),
    drop: () => (dropped ??= adminQuery(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)),
  };
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
