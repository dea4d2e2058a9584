import type { Db } from '../storage/sqlite/open-database.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { Outbox, type OutboxEvent } from '../webhooks/outbox.js';
import { JOB_PHASES, JOB_STATUSES, TERMINAL_STATUSES, type JobPhase, type JobStatus } from './job-states.js';

export interface JobOptions {
  /** Header the caller named as the key column (compared without case). */
  column?: string;
  /** Several lookups per row, in output order; the job's `type` is then their types joined by commas. */
  lookups?: { type: string; column?: string }[];
  downloadLink?: boolean;
  /** ISO 3166-1 alpha-2 country for phone numbers written without a country code. */
  defaultCountry?: string;
  /**
   * Failure budget: the share (0 to 1) of the job's rows that may end as `error`. One row more and
   * the job fails with `error_budget_exceeded`. Unset in jobs created before budgets existed.
   */
  maxErrorRate?: number;
}

export interface JobRecord {
  id: string;
  accountId: string;
  type: string;
  status: JobStatus;
  phase: JobPhase;
  reason: string | null;
  errorMessage: string | null;
  inputKey: string;
  inputName: string | null;
  options: JobOptions;
  header: string[] | null;
  keyColumn: number | null;
  totalRows: number | null;
  chunkCount: number | null;
  processedRows: number;
  foundRows: number;
  invalidRows: number;
  duplicateRows: number;
  errorRows: number;
  creditsUsed: number;
  leaseEpoch: number;
  attempts: number;
  resultAllKey: string | null;
  resultFoundKey: string | null;
  resultErrorsKey: string | null;
  createdAt: number;
  startedAt: number | null;
  updatedAt: number;
  finishedAt: number | null;
}

export interface ChunkRecord {
  jobId: string;
  chunkIndex: number;
  firstRow: number;
  rowCount: number;
  cursor: number;
  status: 'pending' | 'done';
  leaseEpoch: number;
  attempts: number;
  /** 0 for the first run over every row; each retry of the chunk's failed rows is one pass more. */
  pass: number;
  /** Rows this pass works through: `rowCount` in the first pass, the failed rows in a retry. */
  passRows: number;
  /** One byte per row (ROW_FLAGS) once the chunk is done, kept only when some row failed. */
  rowFlags: Buffer | null;
}

export interface Lease {
  owner: string;
  epoch: number;
}

/** One checkpoint batch's rendered rows, by export, and one ROW_FLAGS byte per row. */
/** One checkpoint batch's result rows. */
export interface BatchOutput {
  /** The rows as result CSV text, in order. */
  allText: string;
  /** Where each row ends in `allText` (in UTF-16 code units), one little-endian uint32 per row. */
  rowEnds: Buffer;
  /** One ROW_FLAGS byte per row. */
  rowFlags: Buffer;
}

/** A batch output as stored: one written before migration 008 has no row ends but its filtered texts. */
export type StoredOutput = Omit<BatchOutput, 'rowEnds'> & { rowEnds: Buffer | null; foundText: string; errorsText: string };

/** The rows of a stored output whose flags have `bit` (ROW_FLAGS.found or .error), as one text. */
export function flaggedText(output: StoredOutput, bit: typeof ROW_FLAGS.found | typeof ROW_FLAGS.error): string {
  const { allText, rowEnds, rowFlags } = output;
  if (rowEnds === null) return bit === ROW_FLAGS.found ? output.foundText : output.errorsText;
  const runs: string[] = [];
  let start = 0;
  let runStart = -1;
  for (let i = 0; i < rowFlags.length; i++) {
    const end = rowEnds.readUInt32LE(i * 4);
    if ((rowFlags[i]! & bit) !== 0) {
      if (runStart < 0) runStart = start;
    } else if (runStart >= 0) {
      runs.push(allText.slice(runStart, start));
      runStart = -1;
    }
    start = end;
  }
  if (runStart >= 0) runs.push(allText.slice(runStart, start));
  return runs.join('');
}

/**
 * Bits of a row's flag byte: whether the row is in `found` and in `errors`, and in a job with
 * several lookups (at most 3), which of them failed and which found something.
 */
export const ROW_FLAGS = { found: 1, error: 2 } as const;

export function lookupErrorFlag(lookup: number): number {
  return 4 << lookup;
}

export function lookupFoundFlag(lookup: number): number {
  return 32 << lookup;
}

export function countFlagged(flags: Uint8Array, bit: number): number {
  let n = 0;
  for (const f of flags) if (f & bit) n++;
  return n;
}

export interface RowCounters {
  processed: number;
  found: number;
  invalid: number;
  duplicate: number;
  error: number;
  credits: number;
}

const JOB_COLUMNS = `id, account_id AS accountId, type, status, phase, reason, error_message AS errorMessage,
  input_key AS inputKey, input_name AS inputName, options, header, key_column AS keyColumn,
  total_rows AS totalRows, chunk_count AS chunkCount, processed_rows AS processedRows,
  found_rows AS foundRows, invalid_rows AS invalidRows, duplicate_rows AS duplicateRows,
  error_rows AS errorRows, credits_used AS creditsUsed, lease_epoch AS leaseEpoch, attempts,
  result_all_key AS resultAllKey, result_found_key AS resultFoundKey, result_errors_key AS resultErrorsKey, created_at AS createdAt,
  started_at AS startedAt, updated_at AS updatedAt, finished_at AS finishedAt`;

const CHUNK_COLUMNS = `job_id AS jobId, chunk_index AS chunkIndex, first_row AS firstRow, row_count AS rowCount,
  cursor, status, lease_epoch AS leaseEpoch, attempts, pass, COALESCE(pass_rows, row_count) AS passRows, row_flags AS rowFlags`;

type JobRow = Omit<JobRecord, 'options' | 'header'> & { options: string; header: string | null };

/**
 * Jobs, chunks and their leases. A lease is (owner, epoch, expiry); every write a lease holder
 * makes names its epoch, so a worker that was frozen past its expiry cannot commit over the
 * worker that took its place.
 */
export class JobStore {
  private readonly s;

  private readonly outbox: Outbox;

  constructor(private readonly db: Db) {
    this.outbox = new Outbox(db);
    this.s = {
      insertJob: db.prepare(
        `INSERT INTO jobs (id, account_id, type, status, phase, input_key, input_name, options, created_at, updated_at)
         VALUES (@id, @accountId, @type, 'queued', 'split', @inputKey, @inputName, @options, @now, @now)`,
      ),
      job: db.prepare(`SELECT ${JOB_COLUMNS} FROM jobs WHERE id = ?`),
      listAll: db.prepare(`SELECT ${JOB_COLUMNS} FROM jobs WHERE (@accountId IS NULL OR account_id = @accountId) AND (@status IS NULL OR status = @status) ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`),
      countAll: db.prepare('SELECT COUNT(*) AS n FROM jobs WHERE (@accountId IS NULL OR account_id = @accountId) AND (@status IS NULL OR status = @status)'),
      phaseCandidate: db.prepare(
        `SELECT id FROM jobs
          WHERE ((status = 'queued' AND phase = 'split'
                  AND (SELECT count(*) FROM jobs r WHERE r.account_id = jobs.account_id AND r.status = 'running') < @maxRunning)
                 OR (status = 'running' AND phase IN ('split', 'assemble')))
            AND (lease_expires_at IS NULL OR lease_expires_at < @now)
          ORDER BY created_at, id LIMIT 1`,
      ),
      takeJobLease: db.prepare(
        `UPDATE jobs SET lease_owner = @owner, lease_epoch = lease_epoch + 1, lease_expires_at = @expires,
           attempts = attempts + 1, status = 'running', started_at = COALESCE(started_at, @now), updated_at = @now
         WHERE id = @id`,
      ),
      renewJobLease: db.prepare('UPDATE jobs SET lease_expires_at = ? WHERE id = ? AND lease_epoch = ? AND lease_owner = ?'),
      releaseJobLease: db.prepare('UPDATE jobs SET lease_owner = NULL, lease_expires_at = NULL WHERE id = ? AND lease_epoch = ?'),
      chunkCandidate: db.prepare(
        `SELECT c.job_id AS jobId, c.chunk_index AS chunkIndex FROM job_chunks c JOIN jobs j ON j.id = c.job_id
          WHERE j.status = 'running' AND j.phase = 'process' AND c.status = 'pending'
            AND (c.lease_expires_at IS NULL OR c.lease_expires_at < @now)
          ORDER BY (SELECT count(*) FROM job_chunks h JOIN jobs hj ON hj.id = h.job_id
                     WHERE hj.account_id = j.account_id AND h.status = 'pending' AND h.lease_expires_at >= @now),
                   j.created_at, c.job_id, c.chunk_index LIMIT 1`,
      ),
      starvedAccount: db.prepare(
        `SELECT 1 FROM job_chunks c JOIN jobs j ON j.id = c.job_id
          WHERE j.status = 'running' AND j.phase = 'process' AND c.status = 'pending' AND j.account_id != @account
            AND (c.lease_expires_at IS NULL OR c.lease_expires_at < @now)
            AND NOT EXISTS (SELECT 1 FROM job_chunks h JOIN jobs hj ON hj.id = h.job_id
                             WHERE hj.account_id = j.account_id AND h.status = 'pending' AND h.lease_expires_at >= @now)
         UNION ALL
         SELECT 1 FROM jobs q
          WHERE q.account_id != @account AND (q.lease_expires_at IS NULL OR q.lease_expires_at < @now)
            AND ((q.status = 'queued' AND q.phase = 'split'
                  AND (SELECT count(*) FROM jobs r WHERE r.account_id = q.account_id AND r.status = 'running') < @maxRunning)
                 OR (q.status = 'running' AND q.phase IN ('split', 'assemble')))
          LIMIT 1`,
      ),
      takeChunkLease: db.prepare(
        `UPDATE job_chunks SET lease_owner = @owner, lease_epoch = lease_epoch + 1, lease_expires_at = @expires, attempts = attempts + 1
          WHERE job_id = @jobId AND chunk_index = @chunkIndex`,
      ),
      chunk: db.prepare(`SELECT ${CHUNK_COLUMNS} FROM job_chunks WHERE job_id = ? AND chunk_index = ?`),
      chunks: db.prepare(`SELECT ${CHUNK_COLUMNS} FROM job_chunks WHERE job_id = ? ORDER BY chunk_index`),
      renewChunkLease: db.prepare('UPDATE job_chunks SET lease_expires_at = ? WHERE job_id = ? AND chunk_index = ? AND lease_epoch = ? AND lease_owner = ?'),
      liveLeaseOwners: db.prepare(
        // Only running jobs and pending chunks hold leases; their statuses keep this to the index.
        `SELECT lease_owner AS owner FROM jobs WHERE status = 'running' AND lease_owner IS NOT NULL AND lease_expires_at >= @now
         UNION SELECT lease_owner FROM job_chunks WHERE status = 'pending' AND lease_owner IS NOT NULL AND lease_expires_at >= @now`,
      ),
      freeJobLeasesOf: db.prepare('UPDATE jobs SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = ?'),
      freeChunkLeasesOf: db.prepare('UPDATE job_chunks SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = ?'),
      releaseChunkLease: db.prepare('UPDATE job_chunks SET lease_owner = NULL, lease_expires_at = NULL WHERE job_id = ? AND chunk_index = ? AND lease_epoch = ?'),
      insertChunk: db.prepare('INSERT OR REPLACE INTO job_chunks (job_id, chunk_index, first_row, row_count) VALUES (?, ?, ?, ?)'),
      finishSplit: db.prepare(
        `UPDATE jobs SET phase = 'process', header = @header, key_column = @keyColumn, total_rows = @totalRows,
           chunk_count = @chunkCount, lease_owner = NULL, lease_expires_at = NULL, updated_at = @now
         WHERE id = @id AND lease_epoch = @epoch AND status = 'running' AND phase = 'split'`,
      ),
      advanceChunk: db.prepare(
        'UPDATE job_chunks SET cursor = cursor + @rows, failures = 0 WHERE job_id = @jobId AND chunk_index = @chunkIndex AND lease_epoch = @epoch AND lease_owner = @owner AND cursor = @expectedCursor',
      ),
      addCounters: db.prepare(
        `UPDATE jobs SET processed_rows = processed_rows + @processed, found_rows = found_rows + @found,
           invalid_rows = invalid_rows + @invalid, duplicate_rows = duplicate_rows + @duplicate,
           error_rows = error_rows + @error, credits_used = credits_used + @credits, updated_at = @now
         WHERE id = @jobId`,
      ),
      insertOutput: db.prepare(
        "INSERT INTO chunk_outputs (job_id, chunk_index, first_row, all_text, found_text, errors_text, row_flags, row_ends) VALUES (?, ?, ?, ?, '', '', ?, ?)",
      ),
      outputs: db.prepare(
        'SELECT all_text AS allText, found_text AS foundText, errors_text AS errorsText, row_flags AS rowFlags, row_ends AS rowEnds FROM chunk_outputs WHERE job_id = ? AND chunk_index = ? ORDER BY first_row',
      ),
      deleteOutputs: db.prepare('DELETE FROM chunk_outputs WHERE job_id = ? AND chunk_index = ?'),
      markChunkDone: db.prepare(
        `UPDATE job_chunks SET status = 'done', row_flags = @flags, lease_owner = NULL, lease_expires_at = NULL
          WHERE job_id = @jobId AND chunk_index = @chunkIndex AND lease_epoch = @epoch AND cursor = COALESCE(pass_rows, row_count) AND status = 'pending'
          RETURNING retry_wanted AS retryWanted`,
      ),
      // A chunk's failed rows, once more: the next pass works through just those.
      retryChunk: db.prepare(
        `UPDATE job_chunks SET status = 'pending', pass = pass + 1, pass_rows = @rows, cursor = 0, retry_wanted = 0, failures = 0,
           lease_owner = NULL, lease_expires_at = NULL
         WHERE job_id = @jobId AND chunk_index = @chunkIndex`,
      ),
      wantRetry: db.prepare("UPDATE job_chunks SET retry_wanted = 1 WHERE job_id = ? AND status = 'pending'"),
      doneChunksWithFailures: db.prepare("SELECT chunk_index AS chunkIndex, row_flags AS rowFlags FROM job_chunks WHERE job_id = ? AND status = 'done' AND row_flags IS NOT NULL"),
      reopenJob: db.prepare(
        `UPDATE jobs SET status = 'running', phase = CASE WHEN phase IN ('assemble', 'done') THEN 'process' ELSE phase END,
           reason = NULL, error_message = NULL, finished_at = NULL, failures = 0, lease_owner = NULL, lease_expires_at = NULL, updated_at = @now
         WHERE id = @id`,
      ),
      errorBudget: db.prepare('SELECT error_rows AS errorRows, total_rows AS totalRows FROM jobs WHERE id = ?'),
      pendingChunks: db.prepare("SELECT COUNT(*) AS n FROM job_chunks WHERE job_id = ? AND status != 'done'"),
      toAssemble: db.prepare("UPDATE jobs SET phase = 'assemble', lease_owner = NULL, lease_expires_at = NULL, updated_at = ? WHERE id = ? AND phase = 'process'"),
      complete: db.prepare(
        `UPDATE jobs SET status = 'completed', phase = 'done', reason = NULL, result_all_key = @allKey, result_found_key = @foundKey, result_errors_key = @errorsKey,
           lease_owner = NULL, lease_expires_at = NULL, updated_at = @now, finished_at = @now
         WHERE id = @id AND lease_epoch = @epoch AND status = 'running' AND phase = 'assemble'`,
      ),
      setStatus: db.prepare(
        `UPDATE jobs SET status = @status, reason = @reason, error_message = @message, updated_at = @now,
           finished_at = CASE WHEN @terminal THEN @now WHEN @status = 'running' THEN NULL ELSE finished_at END,
           lease_owner = CASE WHEN @releaseLease THEN NULL ELSE lease_owner END,
           lease_expires_at = CASE WHEN @releaseLease THEN NULL ELSE lease_expires_at END
         WHERE id = @id`,
      ),
      chunkFailed: db.prepare(
        'UPDATE job_chunks SET failures = failures + 1, lease_expires_at = @retryAt WHERE job_id = @jobId AND chunk_index = @chunkIndex AND lease_epoch = @epoch RETURNING failures',
      ),
      phaseFailed: db.prepare('UPDATE jobs SET failures = failures + 1, lease_expires_at = @retryAt WHERE id = @jobId AND lease_epoch = @epoch RETURNING failures'),
      phaseDone: db.prepare('UPDATE jobs SET failures = 0 WHERE id = ?'),
      chunksFresh: db.prepare('UPDATE job_chunks SET failures = 0 WHERE job_id = ?'),
      jobStatus: db.prepare('SELECT status FROM jobs WHERE id = ?'),
      pausedFor: db.prepare("SELECT id FROM jobs WHERE status = 'paused' AND reason = ? AND updated_at <= ? LIMIT 100"),
    };
  }

  create(input: { id: string; accountId: string; type: string; inputKey: string; inputName: string | null; options: JobOptions; now: number }): JobRecord {
    this.s.insertJob.run({ ...input, options: JSON.stringify(input.options) });
    return this.require(input.id);
  }

  get(id: string): JobRecord | undefined {
    const row = this.s.job.get(id) as JobRow | undefined;
    return row && toJob(row);
  }

  require(id: string): JobRecord {
    const job = this.get(id);
    if (!job) throw new AppError(ERROR_CODES.jobNotFound, `no job ${id}`, { statusCode: 404 });
    return job;
  }

  status(id: string): JobStatus | undefined {
    return (this.s.jobStatus.get(id) as { status: JobStatus } | undefined)?.status;
  }

  list(filter: { accountId?: string; status?: JobStatus; limit: number; offset: number }): { jobs: JobRecord[]; total: number } {
    const params = { accountId: filter.accountId ?? null, status: filter.status ?? null, limit: filter.limit, offset: filter.offset };
    const rows = this.s.listAll.all(params) as JobRow[];
    const total = (this.s.countAll.get({ accountId: params.accountId, status: params.status }) as { n: number }).n;
    return { jobs: rows.map(toJob), total };
  }

  chunks(jobId: string): ChunkRecord[] {
    return this.s.chunks.all(jobId) as ChunkRecord[];
  }

  chunk(jobId: string, chunkIndex: number): ChunkRecord | undefined {
    return this.s.chunk.get(jobId, chunkIndex) as ChunkRecord | undefined;
  }

  /** Takes the oldest job that needs splitting or assembling and whose lease is free. */
  acquireJobPhase(owner: string, now: number, leaseMs: number, maxRunningPerAccount = Number.MAX_SAFE_INTEGER): { job: JobRecord; lease: Lease } | undefined {
    return this.db
      .transaction(() => {
        const candidate = this.s.phaseCandidate.get({ now, maxRunning: maxRunningPerAccount }) as { id: string } | undefined;
        if (!candidate) return undefined;
        this.s.takeJobLease.run({ id: candidate.id, owner, expires: now + leaseMs, now });
        const job = this.require(candidate.id);
        return { job, lease: { owner, epoch: job.leaseEpoch } };
      })
      .immediate();
  }

  renewJobLease(jobId: string, lease: Lease, expiresAt: number): boolean {
    return this.s.renewJobLease.run(expiresAt, jobId, lease.epoch, lease.owner).changes === 1;
  }

  releaseJobLease(jobId: string, lease: Lease): void {
    this.s.releaseJobLease.run(jobId, lease.epoch);
  }

  /**
   * Counts a retryable failure of leased work and keeps the lease until `retryAt`, which is the
   * backoff. Returns the failures in a row so far (0 if the lease was lost meanwhile).
   */
  recordFailure(target: { jobId: string; chunkIndex?: number }, lease: Lease, retryAt: number): number {
    const row = (
      target.chunkIndex === undefined
        ? this.s.phaseFailed.get({ jobId: target.jobId, epoch: lease.epoch, retryAt })
        : this.s.chunkFailed.get({ jobId: target.jobId, chunkIndex: target.chunkIndex, epoch: lease.epoch, retryAt })
    ) as { failures: number } | undefined;
    return row?.failures ?? 0;
  }

  /** A phase (split or assemble) finished: its earlier failures no longer count. */
  clearPhaseFailures(jobId: string): void {
    this.s.phaseDone.run(jobId);
  }

  /** A resumed job starts with a clean failure count everywhere. */
  clearFailures(jobId: string): void {
    this.db.transaction(() => {
      this.s.phaseDone.run(jobId);
      this.s.chunksFresh.run(jobId);
    }).immediate();
  }

  /** Owners of leases that have not run out. */
  liveLeaseOwners(now: number): string[] {
    return (this.s.liveLeaseOwners.all({ now }) as { owner: string }[]).map((r) => r.owner);
  }

  /**
   * Frees every lease `owner` holds, as if they had run out, and says how many there were. Their
   * epochs stay: should the owner be alive after all, its renewals and commits are refused.
   */
  freeLeasesOf(owner: string): number {
    return this.db.transaction(() => this.s.freeJobLeasesOf.run(owner).changes + this.s.freeChunkLeasesOf.run(owner).changes).immediate();
  }

  /** Takes the next pending chunk of a running job whose lease is free. */
  acquireChunk(owner: string, now: number, leaseMs: number): { chunk: ChunkRecord; lease: Lease } | undefined {
    return this.db
      .transaction(() => {
        const candidate = this.s.chunkCandidate.get({ now }) as { jobId: string; chunkIndex: number } | undefined;
        if (!candidate) return undefined;
        this.s.takeChunkLease.run({ ...candidate, owner, expires: now + leaseMs });
        const chunk = this.chunk(candidate.jobId, candidate.chunkIndex)!;
        return { chunk, lease: { owner, epoch: chunk.leaseEpoch } };
      })
      .immediate();
  }

  /**
   * Whether another account has work waiting (a chunk while it has none in work, or a job to split
   * or assemble) that no worker holds: a worker busy with this account's
   * chunk then hands its slot over after the current batch, so one huge job cannot starve a small one.
   */
  otherAccountStarved(accountId: string, now: number, maxRunningPerAccount = Number.MAX_SAFE_INTEGER): boolean {
    return this.s.starvedAccount.get({ account: accountId, now, maxRunning: maxRunningPerAccount }) !== undefined;
  }

  renewChunkLease(jobId: string, chunkIndex: number, lease: Lease, expiresAt: number): boolean {
    return this.s.renewChunkLease.run(expiresAt, jobId, chunkIndex, lease.epoch, lease.owner).changes === 1;
  }

  releaseChunkLease(jobId: string, chunkIndex: number, lease: Lease): void {
    this.s.releaseChunkLease.run(jobId, chunkIndex, lease.epoch);
  }

  /** Records the chunks and moves the job to processing, if the split still holds its lease. */
  finishSplit(
    jobId: string,
    lease: Lease,
    split: { header: string[]; keyColumn: number; totalRows: number; chunks: { firstRow: number; rowCount: number }[] },
    now: number,
  ): void {
    this.db.transaction(() => {
      const changed = this.s.finishSplit.run({
        id: jobId,
        epoch: lease.epoch,
        header: JSON.stringify(split.header),
        keyColumn: split.keyColumn,
        totalRows: split.totalRows,
        chunkCount: split.chunks.length,
        now,
      }).changes;
      if (changed !== 1) throw leaseLost(`split of ${jobId}`);
      split.chunks.forEach((c, i) => this.s.insertChunk.run(jobId, i, c.firstRow, c.rowCount));
      if (split.chunks.length === 0) this.s.toAssemble.run(now, jobId);
    }).immediate();
  }

  /**
   * Moves a chunk's cursor forward by `rows`, fenced by the lease epoch and the cursor the caller
   * started from. Call inside the checkpoint transaction: a refusal throws and rolls it all back.
   */
  advanceChunk(jobId: string, chunkIndex: number, lease: Lease, expectedCursor: number, rows: number): void {
    const changed = this.s.advanceChunk.run({ jobId, chunkIndex, epoch: lease.epoch, owner: lease.owner, expectedCursor, rows }).changes;
    if (changed !== 1) throw leaseLost(`chunk ${chunkIndex} of ${jobId}`);
  }

  addCounters(jobId: string, counters: RowCounters, now: number): void {
    this.s.addCounters.run({ jobId, ...counters, now });
  }

  insertOutput(jobId: string, chunkIndex: number, firstRow: number, output: BatchOutput): void {
    this.s.insertOutput.run(jobId, chunkIndex, firstRow, output.allText, output.rowFlags, output.rowEnds);
  }

  outputs(jobId: string, chunkIndex: number): IterableIterator<StoredOutput> {
    return this.s.outputs.iterate(jobId, chunkIndex) as IterableIterator<StoredOutput>;
  }

  /**
   * Marks a fully committed chunk done, keeping its row flags when some row failed; the last chunk
   * moves the job on to assembly. A chunk asked to retry its failed rows (`retry_wanted`) that has
   * some goes straight into its next pass instead.
   */
  completeChunk(jobId: string, chunkIndex: number, lease: Lease, rowFlags: Buffer | null, now: number): void {
    this.db.transaction(() => {
      const done = this.s.markChunkDone.get({ jobId, chunkIndex, epoch: lease.epoch, flags: rowFlags }) as { retryWanted: number } | undefined;
      if (!done) throw leaseLost(`chunk ${chunkIndex} of ${jobId}`);
      this.s.deleteOutputs.run(jobId, chunkIndex);
      const failed = rowFlags === null ? 0 : countFlagged(rowFlags, ROW_FLAGS.error);
      if (done.retryWanted === 1 && failed > 0) this.s.retryChunk.run({ jobId, chunkIndex, rows: failed });
      else if ((this.s.pendingChunks.get(jobId) as { n: number }).n === 0) this.s.toAssemble.run(now, jobId);
    }).immediate();
  }

  /**
   * Whether the job's `error` rows now exceed its failure budget. Call inside the checkpoint
   * transaction that added them.
   */
  overErrorBudget(job: JobRecord): boolean {
    const rate = job.options.maxErrorRate;
    if (rate === undefined) return false;
    const { errorRows, totalRows } = this.s.errorBudget.get(job.id) as { errorRows: number; totalRows: number | null };
    return errorRows > Math.floor(rate * (totalRows ?? 0));
  }

  /**
   * Runs a finished (completed or failed) job's failed rows again, and only them: every done chunk
   * with failed rows starts a retry pass over those rows, and a chunk still in its first pass
   * retries its failed rows as soon as that pass is done. Returns the rows sent back to work.
   */
  retryFailed(jobId: string, now: number): number {
    return this.db
      .transaction(() => {
        const job = this.require(jobId);
        if (job.status !== JOB_STATUSES.completed && job.status !== JOB_STATUSES.failed) {
          throw new AppError(ERROR_CODES.invalidState, `job ${jobId} is ${job.status}; only a completed or failed job's failed rows can be retried`, { statusCode: 409 });
        }
        if (job.errorRows === 0 || job.phase === JOB_PHASES.split) {
          throw new AppError(ERROR_CODES.nothingToRetry, `job ${jobId} has no failed rows to retry`, { statusCode: 409 });
        }
        let rows = 0;
        for (const chunk of this.s.doneChunksWithFailures.all(jobId) as { chunkIndex: number; rowFlags: Buffer }[]) {
          const failed = countFlagged(chunk.rowFlags, ROW_FLAGS.error);
          if (failed === 0) continue;
          this.s.retryChunk.run({ jobId, chunkIndex: chunk.chunkIndex, rows: failed });
          rows += failed;
        }
        // A job finished before failed rows were kept for retries has error rows but no flags.
        if (rows === 0 && (this.s.pendingChunks.get(jobId) as { n: number }).n === 0) {
          throw new AppError(ERROR_CODES.nothingToRetry, `job ${jobId} kept no record of its failed rows; send its file again to retry them`, { statusCode: 409 });
        }
        this.s.wantRetry.run(jobId);
        this.s.reopenJob.run({ id: jobId, now });
        return rows;
      })
      .immediate();
  }

  /** Completes the job and records its event in the outbox, in one transaction. */
  complete(jobId: string, lease: Lease, keys: { allKey: string; foundKey: string; errorsKey: string }, event: OutboxEvent, now: number): void {
    this.db.transaction(() => {
      const changed = this.s.complete.run({ id: jobId, epoch: lease.epoch, ...keys, now }).changes;
      if (changed !== 1) throw leaseLost(`assembly of ${jobId}`);
      this.outbox.add(event, now);
    }).immediate();
  }

  /** Jobs paused for `reason` since at least `before`: what workers retry on their own. */
  pausedSince(reason: string, before: number): string[] {
    return (this.s.pausedFor.all(reason, before) as Array<{ id: string }>).map((r) => r.id);
  }

  /**
   * Like `transition`, but only from the given status, read in the same transaction: a worker
   * ending a job must not trip over an operator who cancelled it a moment before. Returns
   * undefined, changing nothing, when the job is no longer there.
   */
  transitionFrom(from: JobStatus, jobId: string, to: JobStatus, input: { reason?: string | null; message?: string | null; now: number; event?: OutboxEvent }): JobRecord | undefined {
    return this.db
      .transaction(() => (this.status(jobId) === from ? this.transition(jobId, to, input) : undefined))
      .immediate();
  }

  /**
   * Moves a job to another status if the move is allowed from where it is now, and returns the
   * job as it is after the call. Terminal states never change again.
   */
  transition(jobId: string, to: JobStatus, input: { reason?: string | null; message?: string | null; now: number; event?: OutboxEvent }): JobRecord {
    return this.db.transaction(() => {
      const job = this.require(jobId);
      if (!allowed(job, to)) {
        throw new AppError(ERROR_CODES.invalidState, `job ${jobId} is ${job.status} and cannot become ${to}`, { statusCode: 409 });
      }
      const terminal = TERMINAL_STATUSES.has(to);
      this.s.setStatus.run({
        id: jobId,
        status: to,
        reason: input.reason ?? null,
        message: input.message ?? null,
        now: input.now,
        terminal: terminal ? 1 : 0,
        releaseLease: to === JOB_STATUSES.running ? 0 : 1,
      });
      if (input.event) this.outbox.add(input.event, input.now);
      return this.require(jobId);
    }).immediate();
  }
}

function allowed(job: JobRecord, to: JobStatus): boolean {
  if (TERMINAL_STATUSES.has(job.status)) return to === JOB_STATUSES.running && job.status === JOB_STATUSES.failed;
  switch (to) {
    case JOB_STATUSES.running:
      return job.status === JOB_STATUSES.paused || job.status === JOB_STATUSES.queued;
    case JOB_STATUSES.paused:
      return job.status === JOB_STATUSES.running || job.status === JOB_STATUSES.queued;
    default:
      return true;
  }
}

function leaseLost(what: string): AppError {
  return new AppError(ERROR_CODES.leaseLost, `lease lost on ${what}`, { retryable: false });
}

function toJob(row: JobRow): JobRecord {
  return {
    ...row,
    options: JSON.parse(row.options) as JobOptions,
    header: row.header === null ? null : (JSON.parse(row.header) as string[]),
  };
}

export { JOB_PHASES };
