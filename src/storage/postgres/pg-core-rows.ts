import type { ChunkRecord, JobOptions, JobRecord, PhoneCountryCounts, WorkLease } from '../job-records.js';
import type { PgQueryable } from './pg-database.js';
import { AppError, ERROR_CODES } from '../../shared/errors.js';

/** A job row as JobRecord names its fields; `options` and `header` are still JSON text. */
export const JOB_COLUMNS = `id, account_id AS "accountId", type, status, phase, reason, error_message AS "errorMessage",
  input_key AS "inputKey", input_name AS "inputName", options, header, key_column AS "keyColumn",
  total_rows AS "totalRows", chunk_count AS "chunkCount", processed_rows AS "processedRows",
  found_rows AS "foundRows", invalid_rows AS "invalidRows", duplicate_rows AS "duplicateRows",
  error_rows AS "errorRows", credits_used AS "creditsUsed", lease_epoch AS "leaseEpoch", attempts,
  result_all_key AS "resultAllKey", result_found_key AS "resultFoundKey", result_errors_key AS "resultErrorsKey",
  created_at AS "createdAt", started_at AS "startedAt", updated_at AS "updatedAt", finished_at AS "finishedAt", countries`;

export const CHUNK_COLUMNS = `job_id AS "jobId", chunk_index AS "chunkIndex", first_row AS "firstRow", row_count AS "rowCount",
  cursor, status, lease_epoch AS "leaseEpoch", attempts, pass, COALESCE(pass_rows, row_count) AS "passRows", row_flags AS "rowFlags"`;

export type JobRow = Omit<JobRecord, 'options' | 'header' | 'countries'> & { options: string; header: string | null; countries: string | null };

export function toJob(row: JobRow): JobRecord {
  return {
    ...row,
    options: JSON.parse(row.options) as JobOptions,
    header: row.header === null ? null : (JSON.parse(row.header) as string[]),
    countries: row.countries === null ? null : (JSON.parse(row.countries) as PhoneCountryCounts),
  };
}

/**
 * A running job's leases as one JSON text, read in the job's own query so that a listing stays one
 * query: the job's lease and, per owner, the latest lease of its pending chunks.
 */
export const WORK_COLUMN = `CASE WHEN status = 'running' THEN (SELECT COALESCE(json_agg(json_build_object('owner', o, 'expiresAt', e)), '[]')::text FROM (
    SELECT jobs.lease_owner AS o, jobs.lease_expires_at AS e WHERE jobs.lease_expires_at IS NOT NULL
    UNION ALL
    SELECT c.lease_owner, MAX(c.lease_expires_at) FROM job_chunks c
     WHERE c.job_id = jobs.id AND c.status = 'pending' AND c.lease_expires_at IS NOT NULL GROUP BY c.lease_owner) w) END AS work`;

export interface WorkText {
  work: string | null;
}

export function withWork(row: JobRow & WorkText): JobRecord {
  const { work, ...rest } = row;
  const job = toJob(rest);
  return work === null ? job : { ...job, work: JSON.parse(work) as WorkLease[] };
}

export function jobNotFound(id: string): AppError {
  return new AppError(ERROR_CODES.jobNotFound, `no job ${id}`, { statusCode: 404 });
}

/**
 * The job as it is now, its row locked until the transaction ends: every read-then-write of a
 * job's state starts here, so two of them on one job run one after the other.
 */
export async function lockJob(tx: PgQueryable, id: string): Promise<JobRecord | undefined> {
  const { rows } = await tx.query<JobRow>(`SELECT ${JOB_COLUMNS} FROM jobs WHERE id = $1 FOR UPDATE`, [id]);
  return rows[0] && toJob(rows[0]);
}

export async function readChunk(db: PgQueryable, jobId: string, chunkIndex: number): Promise<ChunkRecord | undefined> {
  const { rows } = await db.query<ChunkRecord>(`SELECT ${CHUNK_COLUMNS} FROM job_chunks WHERE job_id = $1 AND chunk_index = $2`, [jobId, chunkIndex]);
  return rows[0];
}
