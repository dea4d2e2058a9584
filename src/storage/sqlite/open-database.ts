import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { BillingKeys } from '../billing-key.js';
import { dataDirSecret } from '../../shared/data-dir-secret.js';
import { AppError, ERROR_CODES } from '../../shared/errors.js';
import { migrationFiles } from '../migration-files.js';

export type Db = Database.Database;

export interface OpenDatabaseOptions {
  synchronous: 'NORMAL' | 'FULL';
  busyTimeoutMs: number;
  /** Page cache of this connection, in MiB; default 32. */
  cacheMb?: number;
  /**
   * The deployment's seal key (SLUICE_SEAL_KEY), from which the billing cache's key names derive.
   * Unset: the data dir's seal.key, made once, as the engine does when SLUICE_SEAL_KEY is unset.
   */
  sealKey?: Buffer;
}

/** Migration 017 hashes the billing cache's keys with the seal key; the key is checked before it. */
const BILLING_HASH_MIGRATION = 17;

/** The SQL function migration 017 hashes existing keys with: the very function the adapter uses. */
export function registerBillingHash(db: Db, names: BillingKeys): void {
  db.function('sluice_billing_hash', { deterministic: true }, (kind: unknown, key: unknown) => names.hash(String(kind), String(key)));
}

/** What names the billing cache's keys for a database file: its options' seal key, or its data dir's. */
export function billingKeysFor(file: string, options: OpenDatabaseOptions): BillingKeys {
  if (options.sealKey) return new BillingKeys(options.sealKey);
  // Before openDatabase makes the directory: the seal key is read (or made) first.
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  return new BillingKeys(Buffer.from(dataDirSecret(path.dirname(file), 'seal.key', () => randomBytes(32).toString('base64')), 'base64'));
}

/**
 * Opens (creating if needed) the one SQLite file that every process on a data dir shares.
 * WAL lets readers run beside the single writer; `busy_timeout` makes a writer wait for another
 * process's transaction instead of failing with SQLITE_BUSY at once.
 */
export function openDatabase(file: string, options: OpenDatabaseOptions, names = billingKeysFor(file, options)): Db {
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
  registerBillingHash(db, names);
  // A process with another seal key must not hash the cache's keys (017) with it: every paid key
  // would read as unpaid, a second charge. So the key is checked between the migrations before 017
  // (which create shared_records) and 017 itself, and at every open after.
  const files = migrationFiles(new URL('./migrations/', import.meta.url));
  migrate(db, files.filter((f) => f.version < BILLING_HASH_MIGRATION));
  requireSealKey(db, names.fingerprint);
  migrate(db, files);
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

/**
 * The seal-key fingerprint `requireSharedSealKey` records (recorded here first when none is), or
 * `bad_config` when the database's differs from ours.
 */
export function requireSealKey(db: Db, fingerprint: string): void {
  const recorded = db
    .transaction(() => {
      db.prepare("INSERT OR IGNORE INTO shared_records (name, value) VALUES ('seal-key-fingerprint', ?)").run(fingerprint);
      return (db.prepare("SELECT value FROM shared_records WHERE name = 'seal-key-fingerprint'").get() as { value: string }).value;
    })
    .immediate();
  if (recorded !== fingerprint) {
    db.close();
    throw new AppError(
      ERROR_CODES.badConfig,
      'SLUICE_SEAL_KEY differs from the key the other processes on this database seal with: every machine that shares a database must be given the same SLUICE_SEAL_KEY',
      { details: { variable: 'SLUICE_SEAL_KEY' } },
    );
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
      if (file.version === MONITOR_TYPES_MIGRATION) widenMonitorTypeChecks(db);
      db.exec(file.sql);
      record.run(file.version, file.name, Date.now());
    }).immediate();
  }
}

/** Migration 035 widens the monitor type CHECKs (see its file for why this way). */
const MONITOR_TYPES_MIGRATION = 35;
const OLD_TYPES_CHECK = "CHECK (type IN ('email', 'phone', 'company'))";
const NEW_TYPES_CHECK = "CHECK (type IN ('email', 'phone', 'company', 'domain', 'ip', 'darkweb'))";

/**
 * Rewrites the CHECK on `type` in the schema text of `target_lists` and `monitors`, inside the
 * migration's transaction. better-sqlite3 opens connections in defensive mode, which forbids
 * writing the schema table; it is lifted for these few statements only.
 */
function widenMonitorTypeChecks(db: Db): void {
  const version = db.pragma('schema_version', { simple: true }) as number;
  db.unsafeMode(true);
  try {
    db.pragma('writable_schema = ON');
    const changed = db
      .prepare("UPDATE sqlite_schema SET sql = replace(sql, ?, ?) WHERE type = 'table' AND name IN ('target_lists', 'monitors') AND instr(sql, ?) > 0")
      .run(OLD_TYPES_CHECK, NEW_TYPES_CHECK, OLD_TYPES_CHECK).changes;
    if (changed !== 2) throw new AppError(ERROR_CODES.internal, `migration 035: expected the type CHECK of target_lists and monitors, found ${changed}`);
    db.pragma(`schema_version = ${version + 1}`);
    db.pragma('writable_schema = OFF');
  } finally {
    db.unsafeMode(false);
  }
}
