import { AppError, ERROR_CODES } from '../../shared/errors.js';
import { countFlagged, ROW_FLAGS, type Lease } from '../job-records.js';
import { JOB_PHASES, JOB_STATUSES } from '../job-states.js';
import { leaseLost } from '../lease-lost.js';
import type { SplitResult } from '../store.js';
import { jobNotFound, lockJob } from './pg-core-rows.js';
import type { PgDatabase, PgQueryable } from './pg-database.js';

/**
 * A job's way from split to assembly, and back for a retry of its failed rows. Each is one
 * transaction; those that read the job's chunks and then move the job lock the job's row first.
 */

/** The chunks and the move to processing, if the split still holds its lease. */
export function finishSplit(db: PgDatabase, jobId: string, lease: Lease, split: SplitResult, now: number): Promise<void> {
  return db.transaction(async (tx) => {
    const { rowCount } = await tx.query(
      `UPDATE jobs SET phase = 'process', header = $3, key_column = $4, total_rows = $5, chunk_count = $6,
         countries = $8, lease_owner = NULL, lease_expires_at = NULL, updated_at = $7
       WHERE id = $1 AND lease_epoch = $2 AND status = 'running' AND phase = 'split'`,
      [jobId, lease.epoch, JSON.stringify(split.header), split.keyColumn, split.totalRows, split.chunks.length, now, split.countries ? JSON.stringify(split.countries) : null],
    );
    if (rowCount !== 1) throw leaseLost(`split of ${jobId}`);
    if (split.chunks.length === 0) {
      await toAssembly(tx, jobId, now);
      return;
    }
    // SQLite's INSERT OR REPLACE: a chunk row already there starts over as a fresh one.
    await tx.query(
      `INSERT INTO job_chunks (job_id, chunk_index, first_row, row_count)
       SELECT $1, t.i - 1, t.first_row, t.row_count FROM unnest($2::int[], $3::int[]) WITH ORDINALITY AS t(first_row, row_count, i)
       ON CONFLICT (job_id, chunk_index) DO UPDATE SET first_row = EXCLUDED.first_row, row_count = EXCLUDED.row_count,
         cursor = 0, status = 'pending', lease_owner = NULL, lease_epoch = 0, lease_expires_at = NULL, attempts = 0,
         failures = 0, row_flags = NULL, pass = 0, retry_wanted = 0, pass_rows = NULL`,
      [jobId, split.chunks.map((c) => c.firstRow), split.chunks.map((c) => c.rowCount)],
    );
  });
}

async function toAssembly(tx: PgQueryable, jobId: string, now: number): Promise<void> {
  await tx.query("UPDATE jobs SET phase = 'assemble', lease_owner = NULL, lease_expires_at = NULL, updated_at = $1 WHERE id = $2 AND phase = 'process'", [now, jobId]);
}

async function pendingChunks(tx: PgQueryable, jobId: string): Promise<number> {
  const { rows } = await tx.query<{ n: number }>("SELECT count(*) AS n FROM job_chunks WHERE job_id = $1 AND status <> 'done'", [jobId]);
  return rows[0]!.n;
}

/** A chunk's failed rows, once more: the next pass works through just those. */
async function retryChunk(tx: PgQueryable, jobId: string, chunkIndex: number, rows: number): Promise<void> {
  await tx.query(
    `UPDATE job_chunks SET status = 'pending', pass = pass + 1, pass_rows = $3, cursor = 0, retry_wanted = 0, failures = 0,
       lease_owner = NULL, lease_expires_at = NULL
     WHERE job_id = $1 AND chunk_index = $2`,
    [jobId, chunkIndex, rows],
  );
}

/**
 * The job's row is locked before the chunk is marked: of two last chunks finishing together, the
 * second counts the pending chunks after the first has committed, so the job moves to assembly once.
 */
export function completeChunk(db: PgDatabase, jobId: string, chunkIndex: number, lease: Lease, rowFlags: Buffer | null, now: number, retryAt?: number): Promise<void> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE', [jobId]);
    const { rows } = await tx.query<{ retryWanted: number }>(
      `UPDATE job_chunks SET status = 'done', row_flags = $4, lease_owner = NULL, lease_expires_at = NULL
        WHERE job_id = $1 AND chunk_index = $2 AND lease_epoch = $3 AND cursor = COALESCE(pass_rows, row_count) AND status = 'pending'
        RETURNING retry_wanted AS "retryWanted"`,
      [jobId, chunkIndex, lease.epoch, rowFlags],
    );
    if (!rows[0]) throw leaseLost(`chunk ${chunkIndex} of ${jobId}`);
    await tx.query('DELETE FROM chunk_outputs WHERE job_id = $1 AND chunk_index = $2', [jobId, chunkIndex]);
    const failed = rowFlags === null ? 0 : countFlagged(rowFlags, ROW_FLAGS.error);
    if (retryAt !== undefined && failed > 0) await deferChunk(tx, jobId, chunkIndex, failed, retryAt);
    else if (rows[0].retryWanted === 1 && failed > 0) await retryChunk(tx, jobId, chunkIndex, failed);
    else if ((await pendingChunks(tx, jobId)) === 0) await toAssembly(tx, jobId, now);
  });
}

/**
 * A deferred pass: unowned, but its lease runs until `retryAt`, so no claim takes it sooner; a new
 * epoch, so that the finishing worker's release of its own lease leaves that time alone.
 */
async function deferChunk(tx: PgQueryable, jobId: string, chunkIndex: number, rows: number, retryAt: number): Promise<void> {
  await tx.query(
    `UPDATE job_chunks SET status = 'pending', pass = pass + 1, pass_rows = $3, cursor = 0, failures = 0,
       lease_owner = NULL, lease_epoch = lease_epoch + 1, lease_expires_at = $4
     WHERE job_id = $1 AND chunk_index = $2`,
    [jobId, chunkIndex, rows, retryAt],
  );
}

/**
 * A finished (completed or failed) job's failed rows go back to work, and only them: every done
 * chunk with failed rows starts a retry pass over those rows, and a chunk still in its first pass
 * retries its failed rows as soon as that pass is done. Returns the rows sent back to work.
 */
export function retryFailed(db: PgDatabase, jobId: string, now: number): Promise<number> {
  return db.transaction(async (tx) => {
    const job = await lockJob(tx, jobId);
    if (!job) throw jobNotFound(jobId);
    if (job.status !== JOB_STATUSES.completed && job.status !== JOB_STATUSES.failed) {
      throw new AppError(ERROR_CODES.invalidState, `job ${jobId} is ${job.status}; only a completed or failed job's failed rows can be retried`, { statusCode: 409 });
    }
    if (job.errorRows === 0 || job.phase === JOB_PHASES.split) {
      throw new AppError(ERROR_CODES.nothingToRetry, `job ${jobId} has no failed rows to retry`, { statusCode: 409 });
    }
    const done = await tx.query<{ chunkIndex: number; rowFlags: Buffer }>(
      `SELECT chunk_index AS "chunkIndex", row_flags AS "rowFlags" FROM job_chunks
        WHERE job_id = $1 AND status = 'done' AND row_flags IS NOT NULL ORDER BY chunk_index`,
      [jobId],
    );
    let rows = 0;
    for (const chunk of done.rows) {
      const failed = countFlagged(chunk.rowFlags, ROW_FLAGS.error);
      if (failed === 0) continue;
      await retryChunk(tx, jobId, chunk.chunkIndex, failed);
      rows += failed;
    }
    // A job finished before failed rows were kept for retries has error rows but no flags.
    if (rows === 0 && (await pendingChunks(tx, jobId)) === 0) {
      throw new AppError(ERROR_CODES.nothingToRetry, `job ${jobId} kept no record of its failed rows; send its file again to retry them`, { statusCode: 409 });
    }
    await tx.query("UPDATE job_chunks SET retry_wanted = 1 WHERE job_id = $1 AND status = 'pending'", [jobId]);
    await tx.query(
      `UPDATE jobs SET status = 'running', phase = CASE WHEN phase IN ('assemble', 'done') THEN 'process' ELSE phase END,
         reason = NULL, error_message = NULL, finished_at = NULL, failures = 0, lease_owner = NULL, lease_expires_at = NULL, updated_at = $2
       WHERE id = $1`,
      [jobId, now],
    );
    return rows;
  });
}
