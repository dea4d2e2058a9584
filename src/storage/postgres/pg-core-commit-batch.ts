import type { BillingKeys } from '../billing-key.js';
import { AppError, ERROR_CODES } from '../../shared/errors.js';
import { JOB_STATUSES, PAUSE_REASONS } from '../job-states.js';
import { chargeLedgerId } from '../ledger-ids.js';
import { leaseLost } from '../lease-lost.js';
import type { BatchCommit, BatchCommitResult, StoreHooks } from '../store.js';
import { callCheckpoint } from './pg-core-checkpoint-call.js';
import { billedAfter, debit, insertLedgerLine, lockAccount, recordBilled, spendable } from './pg-core-charges.js';
import { moveLockedJob } from './pg-core-job-ends.js';
import { lockJob } from './pg-core-rows.js';
import type { PgDatabase, PgQueryable } from './pg-database.js';
import { putResults } from './pg-results.js';

/** Thrown inside the transaction to roll the fence back when the charges are refused. */
class ChargesRefused extends Error {
  constructor(readonly result: Extract<BatchCommitResult, { ok: false }>) {
    super('charges refused');
  }
}

/**
 * One checkpoint in one READ COMMITTED transaction. The cursor update is fenced by epoch, owner and
 * cursor, so a worker that lost its lease writes nothing. The charges run under the account's row
 * lock, which every charge of the account takes first: the repeat-free check, the balance check and
 * the debit see no concurrent charge. Locks are taken chunk, account, job, reservations, the order
 * `transition` and `reserve` respect, so no two of these wait on each other in a circle.
 */
export async function commitBatch(db: PgDatabase, hooks: StoreHooks, names: BillingKeys, input: BatchCommit): Promise<BatchCommitResult> {
  checkKeysOnce(input);
  // Nearly every checkpoint is one call (pg-core-checkpoint-call.ts); one that may end or pause the
  // job runs as the transaction below, which queues the job's events.
  const fast = await callCheckpoint(db, names, input);
  if (fast !== 'slow' && fast !== 'stopped') return fast;
  if (fast === 'slow') {
    try {
      return await db.transaction((tx) => commitIn(tx, hooks, names, input));
    } catch (error) {
      if (error instanceof ChargesRefused) return error.result;
      if (!(error instanceof JobStopped)) throw error;
    }
  }
  // The job paused or was cancelled while the batch was in flight: nothing of it is written (a
  // resumed job redoes it, charged then), and the chunk's reservation goes.
  await db.query('DELETE FROM credit_reservations WHERE job_id = $1 AND chunk_index = $2', [input.jobId, input.chunkIndex]);
  return { ok: true, paused: true, failed: false };
}

/** Thrown inside the transaction to roll it back when the job is paused or cancelled. */
class JobStopped extends Error {}

async function commitIn(tx: PgQueryable, hooks: StoreHooks, names: BillingKeys, input: BatchCommit): Promise<BatchCommitResult> {
  const { jobId, chunkIndex, rows, now } = input;
  // Fenced even when no row commits: a worker that lost its lease must not pause the job either.
  const fenced = await tx.query(
    `UPDATE job_chunks SET cursor = cursor + $5, failures = 0
      WHERE job_id = $1 AND chunk_index = $2 AND lease_epoch = $3 AND lease_owner = $4 AND cursor = $6`,
    [jobId, chunkIndex, input.lease.epoch, input.lease.owner, rows, input.cursor],
  );
  if (fenced.rowCount !== 1) throw leaseLost(`chunk ${chunkIndex} of ${jobId}`);
  // Locked before the account (chunk, job, account, reservations is the order every operation
  // keeps), so that a pause or cancel cannot land between this check and the commit.
  const job = (await lockJob(tx, jobId))!;
  if (job.status === JOB_STATUSES.paused || job.status === JOB_STATUSES.cancelled) throw new JobStopped();
  await charge(tx, names, input);
  await putResults(tx, input.cache, now);
  if (rows > 0) {
    await tx.query(
      "INSERT INTO chunk_outputs (job_id, chunk_index, first_row, all_text, found_text, errors_text, row_flags, row_ends) VALUES ($1, $2, $3, $4, '', '', $5, $6)",
      [jobId, chunkIndex, input.cursor, input.output.allText, input.output.rowFlags, input.output.rowEnds],
    );
    const c = input.counters;
    await tx.query(
      `UPDATE jobs SET processed_rows = processed_rows + $2, found_rows = found_rows + $3, invalid_rows = invalid_rows + $4,
         duplicate_rows = duplicate_rows + $5, error_rows = error_rows + $6, credits_used = credits_used + $7, updated_at = $8
       WHERE id = $1`,
      [jobId, c.processed, c.found, c.invalid, c.duplicate, c.error, c.credits, now],
    );
  }
  const budget = input.errorBudget && input.counters.error > 0 ? input.errorBudget : undefined;
  await tx.query('DELETE FROM credit_reservations WHERE job_id = $1 AND chunk_index = $2', [jobId, chunkIndex]);
  const errorRows = job.errorRows + (rows > 0 ? input.counters.error : 0);
  if (budget && errorRows > Math.floor(budget.maxErrorRate * (job.totalRows ?? 0))) {
    // As the old checkpoint did: past the budget nothing pauses, whether or not this batch fails the job.
    const failed = job.status === JOB_STATUSES.running;
    if (failed) await moveLockedJob(tx, hooks, job, JOB_STATUSES.failed, { reason: ERROR_CODES.errorBudgetExceeded, message: budget.message, now });
    return { ok: true, paused: false, failed };
  }
  if (!input.outOfCredits) return { ok: true, paused: false, failed: false };
  // Credits other chunks of the account hold may come back unspent (their keys billed by another
  // job meanwhile): the chunk waits for them rather than pausing a job the account can still pay.
  // Only chunks in work: a reservation left by a batch that failed before its checkpoint is replaced
  // when its chunk is taken again, and holds nothing until then.
  const { rows: held } = await tx.query<{ n: number }>(
    `SELECT COALESCE(SUM(r.amount), 0)::bigint AS n FROM credit_reservations r
       JOIN job_chunks c ON c.job_id = r.job_id AND c.chunk_index = r.chunk_index
      WHERE r.account_id = $1 AND c.lease_owner IS NOT NULL AND c.lease_expires_at >= $2`,
    [input.accountId, now],
  );
  if (held[0]!.n > 0) return { ok: true, paused: false, failed: false };
  // A top-up resumes only jobs already paused when it commits, so a pause decided on the balance
  // this batch reserved from must not land after one. The account's row, shared-locked after the
  // job's (the order every operation keeps), is the meeting point: a top-up that updated it first
  // is seen here, and one that comes later waits for this pause and then resumes it. Whatever can
  // pay a whole row (one credit per lookup) is tried again instead of pausing.
  const { rows: account } = await tx.query<{ n: number }>(
    `SELECT (a.credits - COALESCE((SELECT SUM(r.amount) FROM credit_reservations r WHERE r.account_id = a.id), 0))::bigint AS n
       FROM accounts a WHERE a.id = $1 FOR SHARE OF a`,
    [input.accountId],
  );
  if ((account[0]?.n ?? 0) >= input.charges.kinds.length) return { ok: true, paused: false, failed: false };
  if (job.status === JOB_STATUSES.running) await moveLockedJob(tx, hooks, job, JOB_STATUSES.paused, { reason: PAUSE_REASONS.insufficientCredits, now });
  return { ok: true, paused: true, failed: false };
}

/** A key listed twice in one kind would be charged twice: a bug of the caller's. */
function checkKeysOnce(input: BatchCommit): void {
  const { kinds, keys, batchId } = input.charges;
  kinds.forEach((kind, k) => {
    const given = keys[k] ?? [];
    if (new Set(given).size !== given.length) throw new AppError(ERROR_CODES.internal, `batch ${batchId} of ${input.jobId} lists a ${kind} key twice`);
  });
}

/**
 * The batch's charges, or ChargesRefused when a key was billed meanwhile (by another chunk or job
 * of the account) or the balance cannot cover them: the caller plans again with what is true now.
 * One ledger line per kind, its id derived from the batch, so a replay collides on it.
 */
async function charge(tx: PgQueryable, names: BillingKeys, input: BatchCommit): Promise<void> {
  const { kinds, keys, batchId, since } = input.charges;
  const total = kinds.reduce((n, _, k) => n + (keys[k]?.length ?? 0), 0);
  if (total === 0) return;
  const account = await lockAccount(tx, input.accountId);
  const billed = await billedAfter(tx, names, account.seq, kinds, keys, since);
  const balance = await spendable(tx, input.accountId, account.credits, { jobId: input.jobId, chunkIndex: input.chunkIndex });
  if (billed.some((set) => set.size > 0) || balance < total) {
    throw new ChargesRefused({ ok: false, billed, balance });
  }
  await debit(tx, input.accountId, total);
  const rows: { kind: string; key: string; ledgerSeq: number }[] = [];
  for (const [k, kind] of kinds.entries()) {
    const kindKeys = keys[k] ?? [];
    if (kindKeys.length === 0) continue;
    const ledgerSeq = await insertLedgerLine(tx, {
      id: chargeLedgerId(input.accountId, input.jobId, k === 0 ? batchId : `${batchId}:${kind}`),
      accountId: input.accountId,
      delta: -kindKeys.length,
      reason: 'charge',
      kind,
      jobId: input.jobId,
      now: input.now,
    });
    if (ledgerSeq === undefined) throw new AppError(ERROR_CODES.internal, `batch ${batchId} of ${input.jobId} was already charged for ${kind}`);
    for (const key of kindKeys) rows.push({ kind, key, ledgerSeq });
  }
  await recordBilled(tx, names, account.seq, rows, input.now);
}
