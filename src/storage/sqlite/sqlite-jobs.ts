import { AppError, ERROR_CODES } from '../../shared/errors.js';
import { JOB_PHASES, JOB_STATUSES, PAUSE_REASONS, TERMINAL_STATUSES, transitionAllowed, type JobStatus } from '../job-states.js';
import { countFlagged, ROW_FLAGS, type ChunkRecord, type JobOptions, type JobRecord, type Lease, type PhoneCountryCounts, type StoredOutput, type WorkLease } from '../job-records.js';
import { leaseLost } from '../lease-lost.js';
import type { BatchCommit, BatchCommitResult, ChunkClaim, JobPhaseClaim, JobsPort, NewJob, SplitResult, StoreHooks, TransitionInput } from '../store.js';
import type { Db } from './open-database.js';
import type { SqliteBilling } from './sqlite-billing.js';
import type { SqliteOutbox } from './sqlite-outbox.js';
import type { SqliteResults } from './sqlite-results.js';

const JOB_COLUMNS = `id, account_id AS accountId, type, status, phase, reason, error_message AS errorMessage,
  input_key AS inputKey, input_name AS inputName, options, header, key_column AS keyColumn,
  total_rows AS totalRows, chunk_count AS chunkCount, processed_rows AS processedRows,
  found_rows AS foundRows, invalid_rows AS invalidRows, duplicate_rows AS duplicateRows,
  error_rows AS errorRows, credits_used AS creditsUsed, lease_epoch AS leaseEpoch, attempts,
  result_all_key AS resultAllKey, result_found_key AS resultFoundKey, result_errors_key AS resultErrorsKey, created_at AS createdAt,
  started_at AS startedAt, updated_at AS updatedAt, finished_at AS finishedAt, countries`;

const CHUNK_COLUMNS = `job_id AS jobId, chunk_index AS chunkIndex, first_row AS firstRow, row_count AS rowCount,
  cursor, status, lease_epoch AS leaseEpoch, attempts, pass, COALESCE(pass_rows, row_count) AS passRows, row_flags AS rowFlags`;

type JobRow = Omit<JobRecord, 'options' | 'header' | 'countries' | 'work'> & { options: string; header: string | null; countries: string | null; work?: string | null };

/**
 * A running job's leases as one JSON text, read in the job's own query so that a listing stays one
 * query: the job's lease and, per owner, the latest lease of its pending chunks.
 */
const WORK_COLUMN = `CASE WHEN status = 'running' THEN (SELECT json_group_array(json_object('owner', o, 'expiresAt', e)) FROM (
    SELECT jobs.lease_owner AS o, jobs.lease_expires_at AS e WHERE jobs.lease_expires_at IS NOT NULL
    UNION ALL
    SELECT c.lease_owner, MAX(c.lease_expires_at) FROM job_chunks c
     WHERE c.job_id = jobs.id AND c.status = 'pending' AND c.lease_expires_at IS NOT NULL GROUP BY c.lease_owner)) END AS work`;

/**
 * Jobs, chunks and their leases, and the operations that change them together with billing and the
 * outbox. A lease is (owner, epoch, expiry); every write a lease holder makes names its epoch, so a
 * worker that was frozen past its expiry cannot commit over the worker that took its place. Every
 * operation that writes runs in one `BEGIN IMMEDIATE` transaction: SQLite's single writer is what
 * serialises them here (the port names the isolation each needs).
 */
export class SqliteJobs implements JobsPort {
  private readonly s;

  constructor(
    private readonly db: Db,
    private readonly billing: SqliteBilling,
    private readonly results: SqliteResults,
    private readonly outbox: SqliteOutbox,
    private readonly hooks: StoreHooks,
  ) {
    this.s = {
      insertJob: db.prepare(
        `INSERT INTO jobs (id, account_id, type, status, phase, input_key, input_name, options, created_at, updated_at, input_bytes)
         VALUES (@id, @accountId, @type, 'queued', 'split', @inputKey, @inputName, @options, @now, @now, @inputBytes)`,
      ),
      job: db.prepare(`SELECT ${JOB_COLUMNS}, ${WORK_COLUMN} FROM jobs WHERE id = ?`),
      listAll: db.prepare(`SELECT ${JOB_COLUMNS}, ${WORK_COLUMN} FROM jobs WHERE (@accountId IS NULL OR account_id = @accountId) AND (@status IS NULL OR status = @status) ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`),
      countAll: db.prepare('SELECT COUNT(*) AS n FROM jobs WHERE (@accountId IS NULL OR account_id = @accountId) AND (@status IS NULL OR status = @status)'),
      phaseCandidate: db.prepare(
        `SELECT id, lease_owner AS previousOwner FROM jobs
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
        `SELECT c.job_id AS jobId, c.chunk_index AS chunkIndex, c.lease_owner AS previousOwner FROM job_chunks c JOIN jobs j ON j.id = c.job_id
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
           chunk_count = @chunkCount, countries = @countries, lease_owner = NULL, lease_expires_at = NULL, updated_at = @now
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
      // One batch at a time: a chunk's texts are never all in memory at once.
      nextOutput: db.prepare(
        `SELECT first_row AS firstRow, all_text AS allText, found_text AS foundText, errors_text AS errorsText, row_flags AS rowFlags, row_ends AS rowEnds
           FROM chunk_outputs WHERE job_id = ? AND chunk_index = ? AND first_row > ? ORDER BY first_row LIMIT 1`,
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
      // A deferred pass: unowned, but its lease runs until @retryAt, so no claim takes it sooner; a
      // new epoch, so that the finishing worker's release of its own lease leaves that time alone.
      deferChunk: db.prepare(
        `UPDATE job_chunks SET status = 'pending', pass = pass + 1, pass_rows = @rows, cursor = 0, failures = 0,
           lease_owner = NULL, lease_epoch = lease_epoch + 1, lease_expires_at = @retryAt
         WHERE job_id = @jobId AND chunk_index = @chunkIndex`,
      ),
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

  async create(input: NewJob): Promise<JobRecord> {
    this.s.insertJob.run({ ...input, options: JSON.stringify(input.options), inputBytes: input.inputBytes ?? 0 });
    return this.requireSync(input.id);
  }

  async get(id: string): Promise<JobRecord | undefined> {
    return this.getSync(id);
  }

  async require(id: string): Promise<JobRecord> {
    return this.requireSync(id);
  }

  async status(id: string): Promise<JobStatus | undefined> {
    return this.statusSync(id);
  }

  async list(filter: { accountId?: string; status?: JobStatus; limit: number; offset: number }): Promise<{ jobs: JobRecord[]; total: number }> {
    const params = { accountId: filter.accountId ?? null, status: filter.status ?? null, limit: filter.limit, offset: filter.offset };
    const rows = this.s.listAll.all(params) as JobRow[];
    const total = (this.s.countAll.get({ accountId: params.accountId, status: params.status }) as { n: number }).n;
    return { jobs: rows.map(toJob), total };
  }

  async chunks(jobId: string): Promise<ChunkRecord[]> {
    return this.s.chunks.all(jobId) as ChunkRecord[];
  }

  async chunk(jobId: string, chunkIndex: number): Promise<ChunkRecord | undefined> {
    return this.s.chunk.get(jobId, chunkIndex) as ChunkRecord | undefined;
  }

  async acquireJobPhase(owner: string, now: number, leaseMs: number, maxRunningPerAccount = Number.MAX_SAFE_INTEGER): Promise<JobPhaseClaim | undefined> {
    // The previous owner is read in the claim's own write transaction: no claimer can lease the
    // job between that read and the update.
    return this.db
      .transaction(() => {
        const candidate = this.s.phaseCandidate.get({ now, maxRunning: maxRunningPerAccount }) as { id: string; previousOwner: string | null } | undefined;
        if (!candidate) return undefined;
        this.s.takeJobLease.run({ id: candidate.id, owner, expires: now + leaseMs, now });
        const job = this.requireSync(candidate.id);
        return { job, lease: { owner, epoch: job.leaseEpoch }, ...previousOwner(candidate.previousOwner) };
      })
      .immediate();
  }

  async renewJobLease(jobId: string, lease: Lease, expiresAt: number): Promise<boolean> {
    return this.s.renewJobLease.run(expiresAt, jobId, lease.epoch, lease.owner).changes === 1;
  }

  async releaseJobLease(jobId: string, lease: Lease): Promise<void> {
    this.s.releaseJobLease.run(jobId, lease.epoch);
  }

  async acquireChunk(owner: string, now: number, leaseMs: number): Promise<ChunkClaim | undefined> {
    return this.db
      .transaction(() => {
        const candidate = this.s.chunkCandidate.get({ now }) as { jobId: string; chunkIndex: number; previousOwner: string | null } | undefined;
        if (!candidate) return undefined;
        this.s.takeChunkLease.run({ jobId: candidate.jobId, chunkIndex: candidate.chunkIndex, owner, expires: now + leaseMs });
        const chunk = this.s.chunk.get(candidate.jobId, candidate.chunkIndex) as ChunkRecord;
        return { chunk, lease: { owner, epoch: chunk.leaseEpoch }, ...previousOwner(candidate.previousOwner) };
      })
      .immediate();
  }

  async renewChunkLease(jobId: string, chunkIndex: number, lease: Lease, expiresAt: number): Promise<boolean> {
    return this.s.renewChunkLease.run(expiresAt, jobId, chunkIndex, lease.epoch, lease.owner).changes === 1;
  }

  async releaseChunkLease(jobId: string, chunkIndex: number, lease: Lease): Promise<void> {
    this.s.releaseChunkLease.run(jobId, chunkIndex, lease.epoch);
  }

  async otherAccountStarved(accountId: string, now: number, maxRunningPerAccount = Number.MAX_SAFE_INTEGER): Promise<boolean> {
    return this.s.starvedAccount.get({ account: accountId, now, maxRunning: maxRunningPerAccount }) !== undefined;
  }

  async recordFailure(target: { jobId: string; chunkIndex?: number }, lease: Lease, retryAt: number): Promise<number> {
    const row = (
      target.chunkIndex === undefined
        ? this.s.phaseFailed.get({ jobId: target.jobId, epoch: lease.epoch, retryAt })
        : this.s.chunkFailed.get({ jobId: target.jobId, chunkIndex: target.chunkIndex, epoch: lease.epoch, retryAt })
    ) as { failures: number } | undefined;
    return row?.failures ?? 0;
  }

  async clearPhaseFailures(jobId: string): Promise<void> {
    this.s.phaseDone.run(jobId);
  }

  async liveLeaseOwners(now: number): Promise<string[]> {
    return (this.s.liveLeaseOwners.all({ now }) as { owner: string }[]).map((r) => r.owner);
  }

  async freeLeasesOf(owner: string): Promise<number> {
    return this.db.transaction(() => this.s.freeJobLeasesOf.run(owner).changes + this.s.freeChunkLeasesOf.run(owner).changes).immediate();
  }

  async finishSplit(jobId: string, lease: Lease, split: SplitResult, now: number): Promise<void> {
    this.db.transaction(() => {
      const changed = this.s.finishSplit.run({
        id: jobId,
        epoch: lease.epoch,
        header: JSON.stringify(split.header),
        keyColumn: split.keyColumn,
        totalRows: split.totalRows,
        chunkCount: split.chunks.length,
        countries: split.countries ? JSON.stringify(split.countries) : null,
        now,
      }).changes;
      if (changed !== 1) throw leaseLost(`split of ${jobId}`);
      split.chunks.forEach((c, i) => this.s.insertChunk.run(jobId, i, c.firstRow, c.rowCount));
      if (split.chunks.length === 0) this.s.toAssemble.run(now, jobId);
    }).immediate();
  }

  async commitBatch(input: BatchCommit): Promise<BatchCommitResult> {
    try {
      return this.commitBatchSync(input);
    } catch (error) {
      if (error instanceof ChargeConflict) return { ok: false, billed: error.billed, balance: error.balance };
      if (!(error instanceof JobStopped)) throw error;
    }
    // The job paused or was cancelled while the batch was in flight: nothing of it is written (a
    // resumed job redoes it, charged then), and the chunk's reservation goes.
    this.db.transaction(() => this.billing.releaseReservationSync(input.jobId, input.chunkIndex)).immediate();
    return { ok: true, paused: true, failed: false };
  }

  private commitBatchSync(input: BatchCommit): BatchCommitResult {
    const { jobId, chunkIndex, lease, rows, now } = input;
    const committed = this.db
      .transaction((): BatchCommitResult => {
        // Fenced even when no row commits: a worker that lost its lease must not pause the job either.
        const moved = this.s.advanceChunk.run({ jobId, chunkIndex, epoch: lease.epoch, owner: lease.owner, expectedCursor: input.cursor, rows }).changes;
        if (moved !== 1) throw leaseLost(`chunk ${chunkIndex} of ${jobId}`);
        const status = this.statusSync(jobId);
        if (status === JOB_STATUSES.paused || status === JOB_STATUSES.cancelled) throw new JobStopped();
        const paid = this.billing.chargeKeysSync({ accountId: input.accountId, jobId, ...input.charges, now }, { jobId, chunkIndex });
        // Nothing has been written yet but the cursor, which the rollback takes back.
        if (!paid.ok) throw new ChargeConflict(paid.billed, paid.balance);
        for (const entry of input.cache) this.results.putSync(entry.kind, entry.key, entry.result, now);
        if (rows > 0) {
          this.s.insertOutput.run(jobId, chunkIndex, input.cursor, input.output.allText, input.output.rowFlags, input.output.rowEnds);
          this.s.addCounters.run({ jobId, ...input.counters, now });
        }
        this.billing.releaseReservationSync(jobId, chunkIndex);
        if (input.errorBudget && input.counters.error > 0 && this.overErrorBudget(jobId, input.errorBudget.maxErrorRate)) {
          const failed = this.statusSync(jobId) === JOB_STATUSES.running;
          if (failed) this.transitionSync(jobId, JOB_STATUSES.failed, { reason: ERROR_CODES.errorBudgetExceeded, message: input.errorBudget.message, now });
          return { ok: true, paused: false, failed };
        }
        if (!input.outOfCredits) return { ok: true, paused: false, failed: false };
        // Credits other chunks of the account hold may come back unspent (their keys billed by
        // another job meanwhile): the chunk waits for them rather than pausing a job the account
        // can still pay for.
        if (this.billing.reservedInWorkSync(input.accountId, now) > 0) return { ok: true, paused: false, failed: false };
        // A top-up that committed after this batch's reservation was read resumes only jobs already
        // paused: a pause decided on the old balance must not land after it. Whatever can pay a
        // whole row (one credit per lookup) is tried again instead.
        if (this.billing.spendableAfterReleaseSync(input.accountId) >= input.charges.kinds.length) return { ok: true, paused: false, failed: false };
        if (this.statusSync(jobId) === JOB_STATUSES.running) this.transitionSync(jobId, JOB_STATUSES.paused, { reason: PAUSE_REASONS.insufficientCredits, now });
        return { ok: true, paused: true, failed: false };
      })
      .immediate();
    this.billing.afterCommit();
    return committed;
  }

  async *outputs(jobId: string, chunkIndex: number): AsyncIterable<StoredOutput> {
    let after = -1;
    for (;;) {
      const row = this.s.nextOutput.get(jobId, chunkIndex, after) as (StoredOutput & { firstRow: number }) | undefined;
      if (row === undefined) return;
      after = row.firstRow;
      yield row;
    }
  }

  async completeChunk(jobId: string, chunkIndex: number, lease: Lease, rowFlags: Buffer | null, now: number, retryAt?: number): Promise<void> {
    this.db.transaction(() => {
      const done = this.s.markChunkDone.get({ jobId, chunkIndex, epoch: lease.epoch, flags: rowFlags }) as { retryWanted: number } | undefined;
      if (!done) throw leaseLost(`chunk ${chunkIndex} of ${jobId}`);
      this.s.deleteOutputs.run(jobId, chunkIndex);
      const failed = rowFlags === null ? 0 : countFlagged(rowFlags, ROW_FLAGS.error);
      if (retryAt !== undefined && failed > 0) this.s.deferChunk.run({ jobId, chunkIndex, rows: failed, retryAt });
      else if (done.retryWanted === 1 && failed > 0) this.s.retryChunk.run({ jobId, chunkIndex, rows: failed });
      else if ((this.s.pendingChunks.get(jobId) as { n: number }).n === 0) this.s.toAssemble.run(now, jobId);
    }).immediate();
  }

  async pauseForProvider(jobId: string, chunkIndex: number, message: string, now: number): Promise<void> {
    this.db.transaction(() => {
      this.billing.releaseReservationSync(jobId, chunkIndex);
      if (this.statusSync(jobId) !== JOB_STATUSES.running) return;
      this.transitionSync(jobId, JOB_STATUSES.paused, { reason: PAUSE_REASONS.providerUnavailable, message, now });
    }).immediate();
  }

  async complete(jobId: string, lease: Lease, keys: { allKey: string; foundKey: string; errorsKey: string }, now: number): Promise<void> {
    this.db.transaction(() => {
      const changed = this.s.complete.run({ id: jobId, epoch: lease.epoch, ...keys, now }).changes;
      if (changed !== 1) throw leaseLost(`assembly of ${jobId}`);
      this.outbox.add(this.hooks.jobEnded(this.requireSync(jobId), now), now);
    }).immediate();
  }

  async transition(jobId: string, to: JobStatus, input: TransitionInput): Promise<JobRecord> {
    return this.db.transaction(() => this.transitionSync(jobId, to, input)).immediate();
  }

  async transitionFrom(from: JobStatus, jobId: string, to: JobStatus, input: TransitionInput): Promise<JobRecord | undefined> {
    return this.db.transaction(() => (this.statusSync(jobId) === from ? this.transitionSync(jobId, to, input) : undefined)).immediate();
  }

  async resume(jobId: string, now: number): Promise<JobRecord> {
    return this.db
      .transaction(() => {
        const job = this.requireSync(jobId);
        if (job.status !== JOB_STATUSES.paused && job.status !== JOB_STATUSES.failed) {
          throw new AppError(ERROR_CODES.invalidState, `job ${jobId} is ${job.status}; only paused or failed jobs can be resumed`, { statusCode: 409 });
        }
        this.s.phaseDone.run(jobId);
        this.s.chunksFresh.run(jobId);
        return this.transitionSync(jobId, JOB_STATUSES.running, { now });
      })
      .immediate();
  }

  async retryFailed(jobId: string, now: number): Promise<number> {
    return this.db
      .transaction(() => {
        const job = this.requireSync(jobId);
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

  async pausedSince(reason: string, before: number): Promise<string[]> {
    return (this.s.pausedFor.all(reason, before) as Array<{ id: string }>).map((r) => r.id);
  }

  private getSync(id: string): JobRecord | undefined {
    const row = this.s.job.get(id) as JobRow | undefined;
    return row && toJob(row);
  }

  private requireSync(id: string): JobRecord {
    const job = this.getSync(id);
    if (!job) throw new AppError(ERROR_CODES.jobNotFound, `no job ${id}`, { statusCode: 404 });
    return job;
  }

  private statusSync(id: string): JobStatus | undefined {
    return (this.s.jobStatus.get(id) as { status: JobStatus } | undefined)?.status;
  }

  /** Whether the job's `error` rows now exceed its failure budget, counters of this transaction included. */
  private overErrorBudget(jobId: string, maxErrorRate: number): boolean {
    const { errorRows, totalRows } = this.s.errorBudget.get(jobId) as { errorRows: number; totalRows: number | null };
    return errorRows > Math.floor(maxErrorRate * (totalRows ?? 0));
  }

  /**
   * Moves a job if the move is allowed from where it is now, inside the caller's transaction.
   * Leaving `running` releases the job's reservations; a terminal status queues the end event.
   */
  private transitionSync(jobId: string, to: JobStatus, input: TransitionInput): JobRecord {
    const job = this.requireSync(jobId);
    if (!transitionAllowed(job.status, to)) {
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
    if (to !== JOB_STATUSES.running) this.billing.releaseJobReservationsSync(jobId);
    const after = this.requireSync(jobId);
    if (terminal) this.outbox.add(this.hooks.jobEnded(after, input.now), input.now);
    if (to === JOB_STATUSES.paused && this.hooks.jobPaused) this.outbox.addIfSubscribed(this.hooks.jobPaused(after, input.now), input.now);
    return after;
  }
}

/** Thrown inside a checkpoint's transaction to roll it back when its job is paused or cancelled. */
class JobStopped extends Error {}

/** Thrown inside a checkpoint's transaction to roll it back when its charges no longer hold. */
class ChargeConflict extends Error {
  constructor(
    readonly billed: Set<string>[],
    readonly balance: number,
  ) {
    super('charge conflict');
  }
}

function toJob(row: JobRow): JobRecord {
  const { work, ...rest } = row;
  return {
    ...rest,
    options: JSON.parse(row.options) as JobOptions,
    header: row.header === null ? null : (JSON.parse(row.header) as string[]),
    countries: row.countries === null ? null : (JSON.parse(row.countries) as PhoneCountryCounts),
    ...(typeof work === 'string' ? { work: JSON.parse(work) as WorkLease[] } : {}),
  };
}

/** A claim's `previousOwner`, present only when a run-out lease was still recorded. */
function previousOwner(owner: string | null): { previousOwner?: string } {
  return owner === null ? {} : { previousOwner: owner };
}
