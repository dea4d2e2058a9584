import path from 'node:path';
import { openPostgresStore } from './postgres/pg-store.js';
import type { OpenDatabaseOptions } from './sqlite/open-database.js';
import { openSqliteStore } from './sqlite/sqlite-store.js';
import type { Store, StoreHooks } from './store.js';

export interface StoreOptions {
  dataDir: string;
  sqlite: OpenDatabaseOptions;
  /** `postgres://...`: PostgreSQL; unset: SQLite in the data dir. */
  databaseUrl: string | undefined;
  /** Connections in the PostgreSQL pool. */
  poolSize: number;
}

/** The adapter the configuration asks for. */
export async function openStore(options: StoreOptions, hooks: StoreHooks): Promise<Store> {
  if (options.databaseUrl !== undefined) return openPostgresStore({ url: options.databaseUrl, poolSize: options.poolSize }, hooks);
  return openSqliteStore(path.join(options.dataDir, 'sluice.db'), options.sqlite, hooks);
}
