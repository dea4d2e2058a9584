import { AppError, ERROR_CODES } from '../../shared/errors.js';
import { notFinished, stillHeld } from '../deletion-errors.js';
import { TERMINAL_STATUSES, type JobStatus } from '../job-states.js';
import type { DeletionReason, JobDeletion, RetentionPort } from '../store.js';
import type { Db } from './open-database.js';

const DELETION_COLUMNS = `id AS jobId, account_id AS accountId, input_key AS inputKey, deleted_at AS deletedAt,
  deleted_reason AS reason, purged_at AS purgedAt`;

/** No lease of the job or of its chunks that has not run out: no worker can still write its objects. */
const NO_LIVE_LEASE = `(j.lease_expires_at IS NULL OR j.lease_expires_at < @now)
  AND NOT EXISTS (SELECT 1 FROM job_chunks c WHERE c.job_id = j.id AND c.lease_expires_at >= @now)`;

/**
 * Job deletion and the retention purge. Each write is one `BEGIN IMMEDIATE` transaction (or one
 * statement), so SQLite's single writer serialises a mark against every other change of the row.
 */
export class SqliteRetention implements RetentionPort {
  private readonly s;

  constructor(private readonly db: Db) {
    this.s = {
      job: db.prepare(`SELECT status, deleted_at AS deletedAt FROM jobs WHERE id = ?`),
      deletion: db.prepare(`SELECT ${DELETION_COLUMNS} FROM jobs WHERE id = ? AND deleted_at IS NOT NULL`),
      mark: db.prepare(
        `UPDATE jobs AS j SET deleted_at = @now, deleted_reason = @reason
          WHERE j.id = @id AND j.deleted_at IS NULL AND j.status IN ('completed', 'failed', 'cancelled') AND ${NO_LIVE_LEASE}`,
      ),
      expiring: db.prepare(
        `SELECT j.id FROM jobs j
          WHERE j.deleted_at IS NULL AND j.finished_at IS NOT NULL AND j.finished_at < @before
            AND j.status IN ('completed', 'failed', 'cancelled') AND ${NO_LIVE_LEASE}
          ORDER BY j.finished_at, j.id LIMIT @limit`,
      ),
      unpurged: db.prepare(`SELECT ${DELETION_COLUMNS} FROM jobs WHERE deleted_at IS NOT NULL AND purged_at IS NULL ORDER BY deleted_at, id LIMIT ?`),
      markPurged: db.prepare('UPDATE jobs SET purged_at = ? WHERE id = ? AND purged_at IS NULL'),
      purgeOutbox: db.prepare('DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE sent_at IS NOT NULL AND sent_at < ? LIMIT ?)'),
      purgeDeliveries: db.prepare(
        `DELETE FROM webhook_deliveries WHERE id IN (
           SELECT id FROM webhook_deliveries
            WHERE status != 'pending' AND created_at < @before AND COALESCE(last_attempt_at, created_at) < @before LIMIT @limit)`,
      ),
    };
  }

  async markDeleted(jobId: string, reason: DeletionReason, now: number): Promise<{ deletion: JobDeletion; marked: boolean }> {
    return this.db
      .transaction(() => {
        const job = this.s.job.get(jobId) as { status: JobStatus; deletedAt: number | null } | undefined;
        if (!job) throw new AppError(ERROR_CODES.jobNotFound, `job ${jobId} not found`, { statusCode: 404 });
        const marked = job.deletedAt === null;
        if (marked) {
          if (!TERMINAL_STATUSES.has(job.status)) throw notFinished(jobId, job.status);
          if (this.s.mark.run({ id: jobId, now, reason }).changes !== 1) throw stillHeld(jobId);
        }
        return { deletion: this.s.deletion.get(jobId) as JobDeletion, marked };
      })
      .immediate();
  }

  async deletion(jobId: string): Promise<JobDeletion | undefined> {
    return this.s.deletion.get(jobId) as JobDeletion | undefined;
  }

  async expire(before: number, now: number, limit: number): Promise<JobDeletion[]> {
    return this.db
      .transaction((): JobDeletion[] => {
        const ids = (this.s.expiring.all({ before, now, limit }) as { id: string }[]).map((r) => r.id);
        for (const id of ids) this.s.mark.run({ id, now, reason: 'retention' });
        return ids.map((id) => this.s.deletion.get(id) as JobDeletion);
      })
      .immediate();
  }

  async unpurged(limit: number): Promise<JobDeletion[]> {
    return this.s.unpurged.all(limit) as JobDeletion[];
  }

  async markPurged(jobId: string, now: number): Promise<void> {
    this.s.markPurged.run(now, jobId);
  }

  async purgeOutbox(before: number, limit: number): Promise<number> {
    return this.s.purgeOutbox.run(before, limit).changes;
  }

  async purgeDeliveries(before: number, limit: number): Promise<number> {
    return this.s.purgeDeliveries.run({ before, limit }).changes;
  }
}
