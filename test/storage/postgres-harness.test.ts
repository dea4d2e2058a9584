import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { migrationFiles } from '../../src/storage/migration-files.js';
import { freshDatabase, migratedDatabase, postgresServerUrl, type FreshDatabase } from '../support/postgres-database.js';

const outsideServer = Boolean(process.env.SLUICE_TEST_DATABASE_URL);

describe.skipIf(!postgresServerUrl())('the test PostgreSQL harness', () => {
  const databases: FreshDatabase[] = [];
  const clients: pg.Client[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end()));
    await Promise.all(databases.map((d) => d.drop()));
  });

  async function connectFresh(prefix?: string): Promise<pg.Client> {
    const database = await freshDatabase(prefix);
    databases.push(database);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    clients.push(client);
    return client;
  }

  it('gives a test a database where it can create a table and read back what it wrote', async () => {
    const db = await connectFresh('harness');
    await db.query('CREATE TABLE rows (id int PRIMARY KEY, name text NOT NULL)');
    await db.query("INSERT INTO rows VALUES (2, 'b'), (1, 'a'), (3, 'é')");
    const { rows } = await db.query<{ id: number; name: string }>('SELECT id, name FROM rows ORDER BY id');
    expect(rows).toEqual([{ id: 1, name: 'a' }, { id: 2, name: 'b' }, { id: 3, name: 'é' }]);
  });

  it.skipIf(outsideServer)('runs PostgreSQL 18 in the C locale with UTF-8', async () => {
    const db = await connectFresh();
    const version = await db.query<{ server_version: string }>('SHOW server_version');
    expect(version.rows[0]!.server_version).toMatch(/^18\b/);
    const settings = await db.query<{ datcollate: string; encoding: string }>(
      'SELECT datcollate, pg_encoding_to_char(encoding) AS encoding FROM pg_database WHERE datname = current_database()');
    expect(settings.rows[0]).toEqual({ datcollate: 'C', encoding: 'UTF8' });
  });

  it('has pg_trgm, so trigram similarity search works', async () => {
    const db = await connectFresh();
    await db.query('CREATE EXTENSION pg_trgm');
    await db.query('CREATE TABLE names (name text)');
    await db.query("INSERT INTO names VALUES ('Acme Corporation'), ('Globex'), ('Initech')");
    await db.query('CREATE INDEX names_trgm ON names USING gin (name gin_trgm_ops)');
    const { rows } = await db.query<{ name: string }>("SELECT name FROM names WHERE name % 'acme corp' ORDER BY similarity(name, 'acme corp') DESC");
    expect(rows.map((r) => r.name)).toEqual(['Acme Corporation']);
  });

  it('keeps two fresh databases apart: a table made in one does not exist in the other', async () => {
    const [one, two] = await Promise.all([connectFresh('iso'), connectFresh('iso')]);
    expect((await one!.query('SELECT current_database() AS name')).rows[0].name)
      .not.toBe((await two!.query('SELECT current_database() AS name')).rows[0].name);
    await one!.query('CREATE TABLE only_in_one (x int)');
    await one!.query('INSERT INTO only_in_one VALUES (1)');
    await expect(two!.query('SELECT * FROM only_in_one')).rejects.toThrow(/does not exist/);
  });

  it('drops a database even while a connection to it is still open', async () => {
    const database = await freshDatabase('dropme');
    const client = new pg.Client({ connectionString: database.url });
    client.on('error', () => {}); // the forced drop terminates this connection
    await client.connect();
    await database.drop();
    const admin = new pg.Client({ connectionString: postgresServerUrl() });
    await admin.connect();
    try {
      const name = new URL(database.url).pathname.slice(1);
      const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      expect(rowCount).toBe(0);
    } finally {
      await admin.end();
      await client.end().catch(() => {});
    }
  });
  it('copies a migrated database from the run\'s template: every migration applied, no rows, nothing shared', async () => {
    const [one, two] = await Promise.all([migratedDatabase('tmpl'), migratedDatabase('tmpl')]);
    databases.push(one!, two!);
    const connect = async (url: string) => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      clients.push(client);
      return client;
    };
    const [a, b] = await Promise.all([connect(one!.url), connect(two!.url)]);
    const expected = migrationFiles(new URL('../../src/storage/postgres/migrations/', import.meta.url)).map((f) => f.version);
    const versions = (await a!.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).rows.map((r) => r.version);
    expect(versions).toEqual(expected);
    expect((await a!.query('SELECT count(*)::int AS n FROM accounts')).rows[0].n).toBe(0);
    await a!.query("INSERT INTO accounts (id, credits, created_at) VALUES ('acc_only_in_one', 1, 0)");
    expect((await b!.query('SELECT count(*)::int AS n FROM accounts')).rows[0].n).toBe(0);
  });
});
