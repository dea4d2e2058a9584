import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { EngineDeps } from './engine-deps.js';
import { DELETION_REASONS, type JobDeletion } from '../storage/store.js';

/**
 * Every prefix a job's objects sit under: its chunks and parts (chunkObjectKey, partObjectKey) and
 * its result files (resultObjectKey). The input is one key outside them, named on the job's row.
 */
export function jobObjectPrefixes(jobId: string): string[] {
  return [`jobs/${jobId}/`, `results/${jobId}/`];
}

/**
 * Deletes a finished job's input, chunks, parts and result files; its row and ledger lines stay.
 * The job is marked deleted first, so that downloads refuse it from then on: a crash or a storage
 * failure after the mark leaves a job nobody can download whose objects the retention sweep
 * deletes later, never a downloadable job with its files gone. A second call repeats the object
 * deletion if the first did not finish, and otherwise changes nothing; `marked` says whether this
 * call was the one that deleted the job.
 */
export async function deleteJob(deps: EngineDeps, jobId: string): Promise<{ deletion: JobDeletion; marked: boolean }> {
  const { deletion, marked } = await deps.store.retention.markDeleted(jobId, DELETION_REASONS.requested, deps.clock.now());
  return { deletion: deletion.purgedAt === null ? await purgeJobObjects(deps, deletion) : deletion, marked };
}

/** Deletes the objects of a job marked deleted, then records that none remain. Idempotent. */
export async function purgeJobObjects(deps: EngineDeps, deletion: JobDeletion): Promise<JobDeletion> {
  let objects = 0;
  for (const prefix of jobObjectPrefixes(deletion.jobId)) objects += await deps.objects.deletePrefix(prefix);
  await deps.objects.delete(deletion.inputKey);
  const purgedAt = deps.clock.now();
  await deps.store.retention.markPurged(deletion.jobId, purgedAt);
  deps.log.info({ jobId: deletion.jobId, reason: deletion.reason, objects }, 'job objects deleted');
  return { ...deletion, purgedAt };
}

/** A deleted job's files are gone for good: 410, with when and why, for every read of them. */
export function jobDeletedError(deletion: JobDeletion): AppError {
  const why = deletion.reason === DELETION_REASONS.retention ? 'after the retention period' : 'on request';
  return new AppError(
    ERROR_CODES.jobDeleted,
    `job ${deletion.jobId} was deleted ${why} at ${new Date(deletion.deletedAt).toISOString()}; its files are gone, its charges stay in the ledger`,
    { statusCode: 410 },
  );
}

/** `job_deleted` (410) for a job whose files were deleted; nothing for any other. */
export async function refuseDeleted(deps: EngineDeps, jobId: string): Promise<void> {
  const deletion = await deps.store.retention.deletion(jobId);
  if (deletion) throw jobDeletedError(deletion);
}

/**
 * When each of these jobs was deleted, for lists that show deleted jobs beside the others (their
 * records stay): without the mark a listed job looked downloadable and answered 410. One point read
 * per job of a page (at most a page's length).
 */
export async function deletionTimes(deps: Pick<EngineDeps, 'store'>, jobIds: readonly string[]): Promise<Map<string, number>> {
  const found = await Promise.all(jobIds.map((id) => deps.store.retention.deletion(id)));
  return new Map(found.flatMap((d) => (d ? [[d.jobId, d.deletedAt] as const] : [])));
}
