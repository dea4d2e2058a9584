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
  /** SLUICE_SEAL_KEY: names the billing cache's keys. Required on PostgreSQL; SQLite falls back to the data dir's seal.key. */
  sealKey?: Buffer;
}

/** The adapter the configuration asks for. */
export async function openStore(options: StoreOptions, hooks: StoreHooks): Promise<Store> {
  if (options.databaseUrl !== undefined) return openPostgresStore({ url: options.databaseUrl, poolSize: options.poolSize, sealKey: options.sealKey }, hooks);
  return openSqliteStore(path.join(options.dataDir, 'sluice.db'), { ...options.sqlite, sealKey: options.sealKey }, hooks);
}
