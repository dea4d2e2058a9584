import { AppError, ERROR_CODES } from '../../shared/errors.js';
import type { JobRecord, Lease } from '../job-records.js';
import { JOB_STATUSES, PAUSE_REASONS, TERMINAL_STATUSES, transitionAllowed, type JobStatus } from '../job-states.js';
import { leaseLost } from '../lease-lost.js';
import type { StoreHooks, TransitionInput } from '../store.js';
import { addToOutbox, subscribed } from './pg-core-outbox.js';
import { JOB_COLUMNS, jobNotFound, lockJob, toJob, type JobRow } from './pg-core-rows.js';
import type { PgDatabase, PgQueryable } from './pg-database.js';

/**
 * Job state changes, each one transaction that starts by locking the job's row (READ COMMITTED):
 * the status a move is checked against is the status it changes, and the released reservations
 * and the end event commit with it.
 */

/**
 * Moves a job whose row the caller has locked. Leaving `running` frees the job's lease and its
 * reservations (a paused or ended job must not keep credits from the account's other jobs); a
 * terminal status queues the job's end event, built from the job as stored after the change; a pause
 * queues its `bulk.paused` when a webhook of the account subscribes to it.
 */
export async function moveLockedJob(tx: PgQueryable, hooks: StoreHooks, job: JobRecord, to: JobStatus, input: TransitionInput): Promise<JobRecord> {
  if (!transitionAllowed(job.status, to)) {
    throw new AppError(ERROR_CODES.invalidState, `job ${job.id} is ${job.status} and cannot become ${to}`, { statusCode: 409 });
  }
  const terminal = TERMINAL_STATUSES.has(to);
  const running = to === JOB_STATUSES.running;
  const { rows } = await tx.query<JobRow>(
    `UPDATE jobs SET status = $2, reason = $3, error_message = $4, updated_at = $5,
       finished_at = CASE WHEN $6::boolean THEN $5 WHEN $7::boolean THEN NULL ELSE finished_at END,
       lease_owner = CASE WHEN $7::boolean THEN lease_owner ELSE NULL END,
       lease_expires_at = CASE WHEN $7::boolean THEN lease_expires_at ELSE NULL END
     WHERE id = $1 RETURNING ${JOB_COLUMNS}`,
    [job.id, to, input.reason ?? null, input.message ?? null, input.now, terminal, running],
  );
  const moved = toJob(rows[0]!);
  if (!running) await releaseJobReservations(tx, job.id);
  if (terminal) await addToOutbox(tx, hooks.jobEnded(moved, input.now), input.now);
  const paused = to === JOB_STATUSES.paused ? hooks.jobPaused?.(moved, input.now) : undefined;
  if (paused && (await subscribed(tx, paused.accountId, paused.event))) await addToOutbox(tx, paused, input.now);
  return moved;
}

export async function releaseJobReservations(tx: PgQueryable, jobId: string): Promise<void> {
  await tx.query('DELETE FROM credit_reservations WHERE job_id = $1', [jobId]);
}

export function transition(db: PgDatabase, hooks: StoreHooks, jobId: string, to: JobStatus, input: TransitionInput): Promise<JobRecord> {
  return db.transaction(async (tx) => {
    const job = await lockJob(tx, jobId);
    if (!job) throw jobNotFound(jobId);
    return moveLockedJob(tx, hooks, job, to, input);
  });
}

/**
 * Only from `from`, read under the row lock: a worker ending a job must not trip over an operator
 * who cancelled it a moment before.
 */
export function transitionFrom(db: PgDatabase, hooks: StoreHooks, from: JobStatus, jobId: string, to: JobStatus, input: TransitionInput): Promise<JobRecord | undefined> {
  return db.transaction(async (tx) => {
    const job = await lockJob(tx, jobId);
    if (job?.status !== from) return undefined;
    return moveLockedJob(tx, hooks, job, to, input);
  });
}

/** A paused or failed job goes on from its last checkpoint, with clean failure counts. */
export function resume(db: PgDatabase, hooks: StoreHooks, jobId: string, now: number): Promise<JobRecord> {
  return db.transaction(async (tx) => {
    const job = await lockJob(tx, jobId);
    if (!job) throw jobNotFound(jobId);
    if (job.status !== JOB_STATUSES.paused && job.status !== JOB_STATUSES.failed) {
      throw new AppError(ERROR_CODES.invalidState, `job ${jobId} is ${job.status}; only paused or failed jobs can be resumed`, { statusCode: 409 });
    }
    await tx.query('UPDATE jobs SET failures = 0 WHERE id = $1', [jobId]);
    await tx.query('UPDATE job_chunks SET failures = 0 WHERE job_id = $1', [jobId]);
    return moveLockedJob(tx, hooks, job, JOB_STATUSES.running, { now });
  });
}

/**
 * The provider is down: the batch commits nothing, its chunk's reservation goes, and a running job
 * pauses until a worker resumes it after the wait. The job's row is locked before the reservation
 * is touched, in the order `transition` takes them, so the two cannot deadlock.
 */
export function pauseForProvider(db: PgDatabase, hooks: StoreHooks, jobId: string, chunkIndex: number, message: string, now: number): Promise<void> {
  return db.transaction(async (tx) => {
    const job = await lockJob(tx, jobId);
    await tx.query('DELETE FROM credit_reservations WHERE job_id = $1 AND chunk_index = $2', [jobId, chunkIndex]);
    if (job?.status !== JOB_STATUSES.running) return;
    await moveLockedJob(tx, hooks, job, JOB_STATUSES.paused, { reason: PAUSE_REASONS.providerUnavailable, message, now });
  });
}

/** Completes the job, fenced by the assembly's lease, and queues its end event with it. */
export function complete(db: PgDatabase, hooks: StoreHooks, jobId: string, lease: Lease, keys: { allKey: string; foundKey: string; errorsKey: string }, now: number): Promise<void> {
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<JobRow>(
      `UPDATE jobs SET status = 'completed', phase = 'done', reason = NULL, result_all_key = $3, result_found_key = $4, result_errors_key = $5,
         lease_owner = NULL, lease_expires_at = NULL, updated_at = $6, finished_at = $6
       WHERE id = $1 AND lease_epoch = $2 AND status = 'running' AND phase = 'assemble' RETURNING ${JOB_COLUMNS}`,
      [jobId, lease.epoch, keys.allKey, keys.foundKey, keys.errorsKey, now],
    );
    if (!rows[0]) throw leaseLost(`assembly of ${jobId}`);
    await addToOutbox(tx, hooks.jobEnded(toJob(rows[0]), now), now);
  });
}
