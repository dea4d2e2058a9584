import pg from 'pg';
import { AppError, ERROR_CODES } from '../../shared/errors.js';
import type { BillingKeys } from '../billing-key.js';
import { migrationFiles, type MigrationFile } from '../migration-files.js';
import { applyMigration } from './pg-billing-key-migration.js';
import type { PgQueryable } from './pg-queryable.js';

/** What a query sees: run SQL with `$1` parameters, get rows and the count of rows changed. */
export type { PgQueryable } from './pg-queryable.js';

export interface PgDatabaseOptions {
  url: string;
  /** Connections in the pool. */
  poolSize: number;
}

/**
 * Codes after which the whole transaction is run again, as graphile-worker's RETRYABLE_ERROR_CODES:
 * a serialization failure and a deadlock roll back everything, so running the function again from
 * the start is safe.
 */
const RETRYABLE_CODES: ReadonlySet<string> = new Set(['40001', '40P01']);
const MAX_TRANSACTION_ATTEMPTS = 8;

/** bigint (int8) as a JS number: every count and epoch-millisecond time Sluice stores is below 2^53. */
const INT8_OID = 20;
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID) return (value: string) => Number(value);
    return format === 'binary' ? pg.types.getTypeParser(oid, 'binary') : pg.types.getTypeParser(oid, 'text');
  },
} as pg.CustomTypesConfig;

/**
 * A pooled PostgreSQL database: autocommit queries, and transactions run by a function that is
 * retried whole on a serialization failure or a deadlock. The adapter's operations are built on
 * these two; nothing outside src/storage/postgres sees a client.
 */
export class PgDatabase implements PgQueryable {
  private readonly pool: pg.Pool;

  constructor(options: PgDatabaseOptions) {
    this.pool = new pg.Pool({ connectionString: options.url, max: options.poolSize, types });
    // An idle client whose server went away emits here; without a listener that kills the process.
    this.pool.on('error', () => undefined);
  }

  /** One statement on its own (autocommit), run again on a serialization failure or deadlock, which roll it back. */
  async query<R extends object = Record<string, unknown>>(sql: string, params: readonly unknown[] = []): Promise<{ rows: R[]; rowCount: number }> {
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.pool.query<R>(sql, params as unknown[]);
        return { rows: result.rows, rowCount: result.rowCount ?? 0 };
      } catch (error) {
        if (isRetryable(error) && attempt < MAX_TRANSACTION_ATTEMPTS) continue;
        throw asConnectionLoss(error);
      }
    }
  }

  /**
   * Runs `fn` in one transaction at READ COMMITTED (or `isolation`). `fn` must do nothing but
   * database work through the client it is given: it may run more than once.
   */
  async transaction<T>(fn: (tx: PgQueryable) => Promise<T>, isolation: 'READ COMMITTED' | 'REPEATABLE READ' | 'SERIALIZABLE' = 'READ COMMITTED'): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const client = await this.pool.connect().catch((error: unknown) => {
        throw asConnectionLoss(error);
      });
      // A connection cut while checked out emits 'error' on its client, which with no listener
      // kills the process; the query in flight rejects too, and that rejection is what we act on.
      const onError = (): void => undefined;
      client.on('error', onError);
      const tx: PgQueryable = {
        async query<R extends object>(sql: string, params: readonly unknown[] = []) {
          const result = await client.query<R>(sql, params as unknown[]);
          return { rows: result.rows, rowCount: result.rowCount ?? 0 };
        },
      };
      let broken = false;
      try {
        await client.query(`BEGIN ISOLATION LEVEL ${isolation}`);
        const value = await fn(tx);
        await client.query('COMMIT');
        return value;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {
          broken = true;
        });
        if (isRetryable(error) && attempt < MAX_TRANSACTION_ATTEMPTS) continue;
        throw asConnectionLoss(error);
      } finally {
        client.off('error', onError);
        client.release(broken);
      }
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** Any constant: every Sluice process that migrates takes this advisory lock first. */
const MIGRATION_LOCK = 7_353_201;

/**
 * Applies the numbered migrations once each, in order, in one transaction. An advisory lock makes
 * processes that start together apply each migration once. `names` hashes the billing cache's
 * existing keys (011); without it, that migration fails on a database that has any.
 */
export async function migratePostgres(db: PgDatabase, names?: BillingKeys, files: MigrationFile[] = migrationFiles(new URL('./migrations/', import.meta.url))): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)');
    const applied = new Set((await tx.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version));
    for (const file of files) {
      if (applied.has(file.version)) continue;
      await applyMigration(tx, file, names);
      await tx.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [file.version, file.name, Date.now()]);
    }
  });
}

function isRetryable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && RETRYABLE_CODES.has(code);
}

/**
 * node-postgres reports a connection that ended under a query ("Connection terminated
 * unexpectedly") as an Error with no code, which would read as a bug of ours. It is the server or
 * the network going away: retryable, like a refused connection, so the worker backs off and tries
 * again. Errors the server sent (a SQLSTATE code) and our own pass through as they are.
 */
function asConnectionLoss(error: unknown): unknown {
  if (error instanceof AppError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const lost = code === undefined && error instanceof Error && /connection|terminat|timeout|ECONN|socket/i.test(error.message);
  if (!lost) return error;
  return new AppError(ERROR_CODES.databaseUnavailable, `PostgreSQL connection lost: ${error.message}`, { retryable: true, cause: error });
}

/** A unique-key violation (SQLSTATE 23505), for operations that turn it into a domain error. */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown }).code === '23505';
}
