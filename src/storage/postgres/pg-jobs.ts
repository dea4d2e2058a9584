import type { BillingKeys } from '../billing-key.js';
import type { ChunkRecord, JobRecord, Lease, StoredOutput } from '../job-records.js';
import type { JobStatus } from '../job-states.js';
import type { BatchCommit, BatchCommitResult, ChunkClaim, JobPhaseClaim, JobsPort, NewJob, SplitResult, StoreHooks, TransitionInput } from '../store.js';
import { acquireChunk, acquireJobPhase } from './pg-core-claims.js';
import { commitBatch } from './pg-core-commit-batch.js';
import { complete, pauseForProvider, resume, transition, transitionFrom } from './pg-core-job-ends.js';
import { completeChunk, finishSplit, retryFailed } from './pg-core-passes.js';
import { CHUNK_COLUMNS, JOB_COLUMNS, jobNotFound, readChunk, toJob, withWork, WORK_COLUMN, type JobRow, type WorkText } from './pg-core-rows.js';
import type { PgDatabase } from './pg-database.js';

/**
 * Jobs, chunks and their leases on PostgreSQL. A lease is (owner, epoch, expiry); every write a
 * lease holder makes names its epoch in its WHERE, so a worker that was frozen past its expiry
 * cannot commit over the worker that took its place, whatever the isolation. The composite
 * operations live in the pg-core-* files beside this one.
 */
export class PgJobs implements JobsPort {
  constructor(
    private readonly db: PgDatabase,
    private readonly hooks: StoreHooks,
    /** Names keys for the billing cache, which commitBatch writes (src/storage/billing-key.ts). */
    private readonly names: BillingKeys,
  ) {}

  async create(input: NewJob): Promise<JobRecord> {
    const { rows } = await this.db.query<JobRow>(
      `INSERT INTO jobs (id, account_id, type, status, phase, input_key, input_name, options, created_at, updated_at, input_bytes)
       VALUES ($1, $2, $3, 'queued', 'split', $4, $5, $6, $7, $7, $8) RETURNING ${JOB_COLUMNS}`,
      [input.id, input.accountId, input.type, input.inputKey, input.inputName, JSON.stringify(input.options), input.now, input.inputBytes ?? 0],
    );
    return toJob(rows[0]!);
  }

  async get(id: string): Promise<JobRecord | undefined> {
    const { rows } = await this.db.query<JobRow & WorkText>(`SELECT ${JOB_COLUMNS}, ${WORK_COLUMN} FROM jobs WHERE id = $1`, [id]);
    return rows[0] && withWork(rows[0]);
  }

  async require(id: string): Promise<JobRecord> {
    const job = await this.get(id);
    if (!job) throw jobNotFound(id);
    return job;
  }

  async status(id: string): Promise<JobStatus | undefined> {
    const { rows } = await this.db.query<{ status: JobStatus }>('SELECT status FROM jobs WHERE id = $1', [id]);
    return rows[0]?.status;
  }

  async list(filter: { accountId?: string; status?: JobStatus; limit: number; offset: number }): Promise<{ jobs: JobRecord[]; total: number }> {
    const where = 'WHERE ($1::text IS NULL OR account_id = $1) AND ($2::text IS NULL OR status = $2)';
    const params = [filter.accountId ?? null, filter.status ?? null];
    const [page, count] = await Promise.all([
      this.db.query<JobRow & WorkText>(`SELECT ${JOB_COLUMNS}, ${WORK_COLUMN} FROM jobs ${where} ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $3 OFFSET $4`, [
        ...params,
        filter.limit,
        filter.offset,
      ]),
      this.db.query<{ n: number }>(`SELECT count(*) AS n FROM jobs ${where}`, params),
    ]);
    return { jobs: page.rows.map(withWork), total: count.rows[0]!.n };
  }

  async chunks(jobId: string): Promise<ChunkRecord[]> {
    return (await this.db.query<ChunkRecord>(`SELECT ${CHUNK_COLUMNS} FROM job_chunks WHERE job_id = $1 ORDER BY chunk_index`, [jobId])).rows;
  }

  chunk(jobId: string, chunkIndex: number): Promise<ChunkRecord | undefined> {
    return readChunk(this.db, jobId, chunkIndex);
  }

  acquireJobPhase(owner: string, now: number, leaseMs: number, maxRunningPerAccount = Number.MAX_SAFE_INTEGER): Promise<JobPhaseClaim | undefined> {
    return acquireJobPhase(this.db, owner, now, leaseMs, maxRunningPerAccount);
  }

  async renewJobLease(jobId: string, lease: Lease, expiresAt: number): Promise<boolean> {
    const { rowCount } = await this.db.query('UPDATE jobs SET lease_expires_at = $1 WHERE id = $2 AND lease_epoch = $3 AND lease_owner = $4', [
      expiresAt,
      jobId,
      lease.epoch,
      lease.owner,
    ]);
    return rowCount === 1;
  }

  async releaseJobLease(jobId: string, lease: Lease): Promise<void> {
    await this.db.query('UPDATE jobs SET lease_owner = NULL, lease_expires_at = NULL WHERE id = $1 AND lease_epoch = $2', [jobId, lease.epoch]);
  }

  acquireChunk(owner: string, now: number, leaseMs: number): Promise<ChunkClaim | undefined> {
    return acquireChunk(this.db, owner, now, leaseMs);
  }

  async renewChunkLease(jobId: string, chunkIndex: number, lease: Lease, expiresAt: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      'UPDATE job_chunks SET lease_expires_at = $1 WHERE job_id = $2 AND chunk_index = $3 AND lease_epoch = $4 AND lease_owner = $5',
      [expiresAt, jobId, chunkIndex, lease.epoch, lease.owner],
    );
    return rowCount === 1;
  }

  async releaseChunkLease(jobId: string, chunkIndex: number, lease: Lease): Promise<void> {
    await this.db.query('UPDATE job_chunks SET lease_owner = NULL, lease_expires_at = NULL WHERE job_id = $1 AND chunk_index = $2 AND lease_epoch = $3', [
      jobId,
      chunkIndex,
      lease.epoch,
    ]);
  }

  async otherAccountStarved(accountId: string, now: number, maxRunningPerAccount = Number.MAX_SAFE_INTEGER): Promise<boolean> {
    const { rows } = await this.db.query(
      `SELECT 1 FROM job_chunks c JOIN jobs j ON j.id = c.job_id
        WHERE j.status = 'running' AND j.phase = 'process' AND c.status = 'pending' AND j.account_id <> $1
          AND (c.lease_expires_at IS NULL OR c.lease_expires_at < $2)
          AND NOT EXISTS (SELECT 1 FROM job_chunks h JOIN jobs hj ON hj.id = h.job_id
                           WHERE hj.account_id = j.account_id AND h.status = 'pending' AND h.lease_expires_at >= $2)
       UNION ALL
       SELECT 1 FROM jobs q
        WHERE q.account_id <> $1 AND (q.lease_expires_at IS NULL OR q.lease_expires_at < $2)
          AND ((q.status = 'queued' AND q.phase = 'split'
                AND (SELECT count(*) FROM jobs r WHERE r.account_id = q.account_id AND r.status = 'running') < $3)
               OR (q.status = 'running' AND q.phase IN ('split', 'assemble')))
       LIMIT 1`,
      [accountId, now, maxRunningPerAccount],
    );
    return rows.length > 0;
  }

  async recordFailure(target: { jobId: string; chunkIndex?: number }, lease: Lease, retryAt: number): Promise<number> {
    const { rows } =
      target.chunkIndex === undefined
        ? await this.db.query<{ failures: number }>(
            'UPDATE jobs SET failures = failures + 1, lease_expires_at = $3 WHERE id = $1 AND lease_epoch = $2 RETURNING failures',
            [target.jobId, lease.epoch, retryAt],
          )
        : await this.db.query<{ failures: number }>(
            'UPDATE job_chunks SET failures = failures + 1, lease_expires_at = $4 WHERE job_id = $1 AND chunk_index = $2 AND lease_epoch = $3 RETURNING failures',
            [target.jobId, target.chunkIndex, lease.epoch, retryAt],
          );
    return rows[0]?.failures ?? 0;
  }

  async clearPhaseFailures(jobId: string): Promise<void> {
    await this.db.query('UPDATE jobs SET failures = 0 WHERE id = $1', [jobId]);
  }

  async liveLeaseOwners(now: number): Promise<string[]> {
    const { rows } = await this.db.query<{ owner: string }>(
      // Only running jobs and pending chunks hold leases; their statuses keep this to the index.
      `SELECT lease_owner AS owner FROM jobs WHERE status = 'running' AND lease_owner IS NOT NULL AND lease_expires_at >= $1
       UNION SELECT lease_owner FROM job_chunks WHERE status = 'pending' AND lease_owner IS NOT NULL AND lease_expires_at >= $1`,
      [now],
    );
    return rows.map((r) => r.owner);
  }

  /** Epochs stay: should the owner be alive after all, its renewals and commits are refused. */
  freeLeasesOf(owner: string): Promise<number> {
    return this.db.transaction(async (tx) => {
      const jobs = await tx.query('UPDATE jobs SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = $1', [owner]);
      const chunks = await tx.query('UPDATE job_chunks SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = $1', [owner]);
      return jobs.rowCount + chunks.rowCount;
    });
  }

  finishSplit(jobId: string, lease: Lease, split: SplitResult, now: number): Promise<void> {
    return finishSplit(this.db, jobId, lease, split, now);
  }

  commitBatch(input: BatchCommit): Promise<BatchCommitResult> {
    return commitBatch(this.db, this.hooks, this.names, input);
  }

  /**
   * One batch per query, by the first row after the last one read: a chunk's texts are never in
   * memory all at once, and no cursor holds a pooled connection between batches.
   */
  async *outputs(jobId: string, chunkIndex: number): AsyncGenerator<StoredOutput> {
    for (let last = -1; ; ) {
      const { rows } = await this.db.query<StoredOutput & { firstRow: number }>(
        `SELECT first_row AS "firstRow", all_text AS "allText", found_text AS "foundText", errors_text AS "errorsText",
                row_flags AS "rowFlags", row_ends AS "rowEnds"
           FROM chunk_outputs WHERE job_id = $1 AND chunk_index = $2 AND first_row > $3 ORDER BY first_row LIMIT 1`,
        [jobId, chunkIndex, last],
      );
      const row = rows[0];
      if (!row) return;
      last = row.firstRow;
      const { firstRow: _, ...output } = row;
      yield output;
    }
  }

  completeChunk(jobId: string, chunkIndex: number, lease: Lease, rowFlags: Buffer | null, now: number, retryAt?: number): Promise<void> {
    return completeChunk(this.db, jobId, chunkIndex, lease, rowFlags, now, retryAt);
  }

  pauseForProvider(jobId: string, chunkIndex: number, message: string, now: number): Promise<void> {
    return pauseForProvider(this.db, this.hooks, jobId, chunkIndex, message, now);
  }

  complete(jobId: string, lease: Lease, keys: { allKey: string; foundKey: string; errorsKey: string }, now: number): Promise<void> {
    return complete(this.db, this.hooks, jobId, lease, keys, now);
  }

  transition(jobId: string, to: JobStatus, input: TransitionInput): Promise<JobRecord> {
    return transition(this.db, this.hooks, jobId, to, input);
  }

  transitionFrom(from: JobStatus, jobId: string, to: JobStatus, input: TransitionInput): Promise<JobRecord | undefined> {
    return transitionFrom(this.db, this.hooks, from, jobId, to, input);
  }

  resume(jobId: string, now: number): Promise<JobRecord> {
    return resume(this.db, this.hooks, jobId, now);
  }

  retryFailed(jobId: string, now: number): Promise<number> {
    return retryFailed(this.db, jobId, now);
  }

  async pausedSince(reason: string, before: number): Promise<string[]> {
    const { rows } = await this.db.query<{ id: string }>(
      "SELECT id FROM jobs WHERE status = 'paused' AND reason = $1 AND updated_at <= $2 ORDER BY updated_at, id COLLATE \"C\" LIMIT 100",
      [reason, before],
    );
    return rows.map((r) => r.id);
  }
}
