import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { migrationFiles } from '../migration-files.js';

export type Db = Database.Database;

export interface OpenDatabaseOptions {
  synchronous: 'NORMAL' | 'FULL';
  busyTimeoutMs: number;
  /** Page cache of this connection, in MiB; default 32. */
  cacheMb?: number;
}

/**
 * Opens (creating if needed) the one SQLite file that every process on a data dir shares.
 * WAL lets readers run beside the single writer; `busy_timeout` makes a writer wait for another
 * process's transaction instead of failing with SQLITE_BUSY at once.
 */
export function openDatabase(file: string, options: OpenDatabaseOptions): Db {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const db = new Database(file, { timeout: options.busyTimeoutMs });
  // SQLite gives the -wal and -shm files the database file's own mode, whatever the umask, so the
  // database is made private before the first statement creates them. By path, never by opening
  // it: closing any descriptor on the file would drop this process's SQLite locks on it.
  for (const suffix of ['', '-wal', '-shm']) ownerOnly(`${file}${suffix}`);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${options.synchronous}`);
  db.pragma(`busy_timeout = ${options.busyTimeoutMs}`);
  db.pragma('foreign_keys = ON');
  // Billing and result-cache inserts land on random B-tree pages; a larger cache keeps those pages
  // in memory, and a larger WAL lets many batches share one checkpoint (and its fsync). 32 MiB
  // measured as fast as 64 MiB on a 1M-row job, for about 30 MB less RSS (bench/OPTIMISATIONS.md).
  db.pragma(`cache_size = -${Math.round((options.cacheMb ?? 32) * 1024)}`);
  db.pragma('wal_autocheckpoint = 16384');
  migrate(db);
  return db;
}

/** Takes group and other bits off a file; one that is missing or another user's is left as it is. */
function ownerOnly(file: string): void {
  try {
    const { mode } = fs.statSync(file);
    if ((mode & 0o077) !== 0) fs.chmodSync(file, mode & 0o700);
  } catch (e: unknown) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'EPERM') throw e;
  }
}

/** Applies the numbered migrations once each, in order, each in its own transaction. */
export function migrate(db: Db, files = migrationFiles(new URL('./migrations/', import.meta.url))): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
  const applied = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?');
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  for (const file of files) {
    // IMMEDIATE: two processes starting together must not both apply the same migration.
    db.transaction(() => {
      if (applied.get(file.version)) return;
      db.exec(file.sql);
      record.run(file.version, file.name, Date.now());
    }).immediate();
  }
}
