import type { IdempotencyClaim } from '../records.js';
import type { IdempotencyPort } from '../store.js';
import type { PgDatabase } from './pg-database.js';

interface ClaimRow {
  fingerprint: string;
  jobId: string | null;
  createdAt: number;
}

/** Idempotency keys of uploads, per account. */
export class PgIdempotency implements IdempotencyPort {
  constructor(private readonly db: PgDatabase) {}

  /**
   * Serialised on the key's row: an insert that meets another request's uncommitted claim waits for
   * it, and a claim that finds the key taken reads it under FOR UPDATE, so two requests never both
   * get `new` and a stale claim is taken over once.
   */
  async claim(accountId: string, key: string, now: number, staleMs: number, keepMs: number): Promise<IdempotencyClaim> {
    return this.db.transaction(async (tx): Promise<IdempotencyClaim> => {
      await tx.query('DELETE FROM idempotency_keys WHERE created_at < $1', [now - keepMs]);
      for (;;) {
        const inserted = await tx.query(
          "INSERT INTO idempotency_keys (account_id, key, fingerprint, created_at) VALUES ($1, $2, '', $3) ON CONFLICT DO NOTHING",
          [accountId, key, now],
        );
        if (inserted.rowCount === 1) return { state: 'new' };
        const { rows } = await tx.query<ClaimRow>(
          'SELECT fingerprint, job_id AS "jobId", created_at AS "createdAt" FROM idempotency_keys WHERE account_id = $1 AND key = $2 FOR UPDATE',
          [accountId, key],
        );
        const row = rows[0];
        // Released (or purged) between the insert and the read: the key is free again, so insert again.
        if (row === undefined) continue;
        if (row.jobId !== null) return { state: 'done', jobId: row.jobId, fingerprint: row.fingerprint };
        if (row.createdAt < now - staleMs) {
          const retaken = await tx.query(
            'UPDATE idempotency_keys SET created_at = $1 WHERE account_id = $2 AND key = $3 AND job_id IS NULL AND created_at = $4',
            [now, accountId, key, row.createdAt],
          );
          if (retaken.rowCount === 1) return { state: 'new' };
        }
        return { state: 'in_flight' };
      }
    });
  }

  async finish(accountId: string, key: string, fingerprint: string, jobId: string): Promise<void> {
    await this.db.query('UPDATE idempotency_keys SET fingerprint = $1, job_id = $2 WHERE account_id = $3 AND key = $4', [fingerprint, jobId, accountId, key]);
  }

  async release(accountId: string, key: string): Promise<void> {
    await this.db.query('DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND job_id IS NULL', [accountId, key]);
  }
}
