import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migratePostgres, PgDatabase } from '../../src/storage/postgres/pg-database.js';

export interface TemplateDatabase {
  name: string;
  drop(): Promise<void>;
}

/**
 * A database with every migration applied and no rows, for tests to copy with
 * `CREATE DATABASE ... TEMPLATE`. Random name: several runs may share an outside server.
 * PostgreSQL copies a template only while nobody is connected to it, so the pool that migrated it
 * is closed before this returns, and no test ever connects to it.
 */
export async function createTemplateDatabase(serverUrl: string): Promise<TemplateDatabase> {
  const name = `sluice_template_${randomBytes(6).toString('hex')}`;
  await adminQuery(serverUrl, `CREATE DATABASE "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = new PgDatabase({ url: url.toString(), poolSize: 1 });
  try {
    await migratePostgres(db);
  } catch (error) {
    await db.close();
    await adminQuery(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    throw error;
  }
  await db.close();
  return { name, drop: () => adminQuery(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
}

export async function adminQuery(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
