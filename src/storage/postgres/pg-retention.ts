import type { JobStatus } from '../job-states.js';
import { TERMINAL_STATUSES } from '../job-states.js';
import { notFinished, stillHeld } from '../deletion-errors.js';
import type { DeletionReason, JobDeletion, RetentionPort } from '../store.js';
import { jobNotFound } from './pg-core-rows.js';
import type { PgDatabase } from './pg-database.js';

const DELETION_COLUMNS = `id AS "jobId", account_id AS "accountId", input_key AS "inputKey", deleted_at AS "deletedAt",
  deleted_reason AS reason, purged_at AS "purgedAt"`;

/** No lease of the job or of its chunks that has not run out: no worker can still write its objects. */
const NO_LIVE_LEASE = `(j.lease_expires_at IS NULL OR j.lease_expires_at < $2)
  AND NOT EXISTS (SELECT 1 FROM job_chunks c WHERE c.job_id = j.id AND c.lease_expires_at >= $2)`;

/**
 * Job deletion and the retention purge on PostgreSQL, at READ COMMITTED. A mark locks the job's
 * row first (`FOR UPDATE`), so it is serialised against transitions, resumes and lease takes of
 * the job; the sweep's claim skips rows another process has locked (`SKIP LOCKED`), so sweeps on
 * several machines split the work instead of waiting on each other.
 */
export class PgRetention implements RetentionPort {
  constructor(private readonly db: PgDatabase) {}

  async markDeleted(jobId: string, reason: DeletionReason, now: number): Promise<{ deletion: JobDeletion; marked: boolean }> {
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<{ status: JobStatus; deletedAt: number | null }>(
        'SELECT status, deleted_at AS "deletedAt" FROM jobs WHERE id = $1 FOR UPDATE',
        [jobId],
      );
      const job = rows[0];
      if (!job) throw jobNotFound(jobId);
      const marked = job.deletedAt === null;
      if (marked) {
        if (!TERMINAL_STATUSES.has(job.status)) throw notFinished(jobId, job.status);
        // New leases go to running jobs only, and the row lock held here keeps this one finished
        // until the mark commits, so no lease can appear between the check and the mark.
        const marked = await tx.query(
          `UPDATE jobs j SET deleted_at = $2, deleted_reason = $3 WHERE j.id = $1 AND ${NO_LIVE_LEASE}`,
          [jobId, now, reason],
        );
        if (marked.rowCount !== 1) throw stillHeld(jobId);
      }
      return { deletion: (await tx.query<JobDeletion>(`SELECT ${DELETION_COLUMNS} FROM jobs WHERE id = $1`, [jobId])).rows[0]!, marked };
    });
  }

  async deletion(jobId: string): Promise<JobDeletion | undefined> {
    const { rows } = await this.db.query<JobDeletion>(`SELECT ${DELETION_COLUMNS} FROM jobs WHERE id = $1 AND deleted_at IS NOT NULL`, [jobId]);
    return rows[0];
  }

  async expire(before: number, now: number, limit: number): Promise<JobDeletion[]> {
    const { rows } = await this.db.query<JobDeletion>(
      `UPDATE jobs SET deleted_at = $2, deleted_reason = 'retention'
        WHERE id IN (
          SELECT j.id FROM jobs j
           WHERE j.deleted_at IS NULL AND j.finished_at IS NOT NULL AND j.finished_at < $1
             AND j.status IN ('completed', 'failed', 'cancelled') AND ${NO_LIVE_LEASE}
           ORDER BY j.finished_at, j.id LIMIT $3
           FOR UPDATE SKIP LOCKED)
          AND deleted_at IS NULL
        RETURNING ${DELETION_COLUMNS}`,
      [before, now, limit],
    );
    return rows;
  }

  async unpurged(limit: number): Promise<JobDeletion[]> {
    const { rows } = await this.db.query<JobDeletion>(
      `SELECT ${DELETION_COLUMNS} FROM jobs WHERE deleted_at IS NOT NULL AND purged_at IS NULL ORDER BY deleted_at, id LIMIT $1`,
      [limit],
    );
    return rows;
  }

  async markPurged(jobId: string, now: number): Promise<void> {
    await this.db.query('UPDATE jobs SET purged_at = $2 WHERE id = $1 AND purged_at IS NULL', [jobId, now]);
  }

  async purgeOutbox(before: number, limit: number): Promise<number> {
    const { rowCount } = await this.db.query(
      'DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE sent_at IS NOT NULL AND sent_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)',
      [before, limit],
    );
    return rowCount;
  }

  async purgeDeliveries(before: number, limit: number): Promise<number> {
    const { rowCount } = await this.db.query(
      `DELETE FROM webhook_deliveries WHERE id IN (
         SELECT id FROM webhook_deliveries
          WHERE status <> 'pending' AND created_at < $1 AND COALESCE(last_attempt_at, created_at) < $1
          LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [before, limit],
    );
    return rowCount;
  }
}
