import type { ChunkRecord } from '../job-records.js';
import type { ChunkClaim, JobPhaseClaim } from '../store.js';
import { CHUNK_COLUMNS, JOB_COLUMNS, withWork, WORK_COLUMN, type JobRow, type WorkText } from './pg-core-rows.js';
import type { PgDatabase, PgQueryable } from './pg-database.js';

/**
 * Claims that several processes race for, as graphile-worker's getJobs and pg-boss's fetchNextJob
 * do them: the candidate is picked and row-locked with `FOR UPDATE SKIP LOCKED`, and its lease taken
 * in the same transaction. A row another claimer holds is skipped; one it has just leased and
 * committed is re-checked by PostgreSQL against the new row, whose lease has not run out, and
 * dropped. So two claimers never take the same job or chunk.
 */

interface Candidate {
  id: string;
  accountId: string;
  status: string;
}

/**
 * The oldest job that needs splitting or assembling, read without a lock: a queued job is locked
 * only once its account's advisory lock is held (see oldestStartable), a running one with SKIP
 * LOCKED right after. `$3` are accounts this claim passed over, `$4` running jobs another claimer
 * took meanwhile.
 */
const PHASE_CANDIDATE = `SELECT id, account_id AS "accountId", status FROM jobs
  WHERE ((status = 'queued' AND phase = 'split' AND NOT (account_id = ANY($3::text[]))
          AND (SELECT count(*) FROM jobs r WHERE r.account_id = jobs.account_id AND r.status = 'running') < $2)
         OR (status = 'running' AND phase IN ('split', 'assemble') AND NOT (id = ANY($4::text[]))))
    AND (lease_expires_at IS NULL OR lease_expires_at < $1)
  ORDER BY created_at, id COLLATE "C" LIMIT 1`;

const TAKE_RUNNING = `SELECT id FROM jobs
  WHERE id = $1 AND status = 'running' AND phase IN ('split', 'assemble') AND (lease_expires_at IS NULL OR lease_expires_at < $2)
  FOR UPDATE SKIP LOCKED`;

/**
 * The lease owner as it was before the claim's UPDATE, read in that same statement (RETURNING only
 * sees the new row). The row is already locked by this transaction, so the value is the one the
 * claim replaces, not one a concurrent claimer wrote.
 */
const OLD_JOB_OWNER = 'SELECT lease_owner AS previous_owner FROM jobs WHERE id = $1 FOR UPDATE';
const OLD_CHUNK_OWNER = 'SELECT lease_owner AS previous_owner FROM job_chunks WHERE job_id = $1 AND chunk_index = $2 FOR UPDATE';

interface PreviousOwner {
  previousOwner: string | null;
}

const OLDEST_QUEUED = `SELECT id FROM jobs
  WHERE account_id = $1 AND status = 'queued' AND phase = 'split' AND (lease_expires_at IS NULL OR lease_expires_at < $2)
  ORDER BY created_at, id COLLATE "C" LIMIT 1
  FOR UPDATE`;

/** Accounts and jobs one claim passes over before it gives up until the next poll. */
const MAX_PASSED_OVER = 20;

export function acquireJobPhase(db: PgDatabase, owner: string, now: number, leaseMs: number, maxRunning: number): Promise<JobPhaseClaim | undefined> {
  return db.transaction(async (tx) => {
    const passedOver: string[] = [];
    const takenMeanwhile: string[] = [];
    while (passedOver.length + takenMeanwhile.length <= MAX_PASSED_OVER) {
      const { rows } = await tx.query<Candidate>(PHASE_CANDIDATE, [now, maxRunning, passedOver, takenMeanwhile]);
      const candidate = rows[0];
      if (!candidate) return undefined;
      let id: string | undefined;
      if (candidate.status === 'queued') {
        id = await oldestStartable(tx, candidate.accountId, now, maxRunning, passedOver.length === 0);
        if (id === undefined) passedOver.push(candidate.accountId);
      } else {
        id = (await tx.query<{ id: string }>(TAKE_RUNNING, [candidate.id, now])).rows[0]?.id;
        if (id === undefined) takenMeanwhile.push(candidate.id);
      }
      if (id === undefined) continue;
      const taken = await tx.query<JobRow & WorkText & PreviousOwner>(
        `UPDATE jobs SET lease_owner = $2, lease_epoch = lease_epoch + 1, lease_expires_at = $3,
           attempts = attempts + 1, status = 'running', started_at = COALESCE(started_at, $4), updated_at = $4
         FROM (${OLD_JOB_OWNER}) old
         WHERE jobs.id = $1 RETURNING ${JOB_COLUMNS}, ${WORK_COLUMN}, old.previous_owner AS "previousOwner"`,
        [id, owner, now + leaseMs, now],
      );
      const { previousOwner, ...row } = taken.rows[0]!;
      // With its leases, as `get` reads it (and SQLite returns it).
      const job = withWork(row);
      return { job, lease: { owner, epoch: job.leaseEpoch }, ...(previousOwner === null ? {} : { previousOwner }) };
    }
    return undefined;
  });
}

/**
 * The account's oldest queued job, locked, if the account may start one more. The count in the
 * candidate query was read from the statement's snapshot, so two processes could each see one job
 * below the cap; starting a queued job therefore takes the account's advisory lock, held to commit,
 * then counts again and only then locks the oldest queued job. Whoever gets the lock second counts
 * in a new snapshot that holds the first one's start, and no claimer holds a queued job's row while
 * it waits for the lock, so the oldest job is the one that starts, as on SQLite. Only the claim's
 * first account is waited for: a claim that holds one account's lock and waited for another's
 * could deadlock with a claim doing the same the other way round, so later accounts are only
 * tried, and passed over when busy (their holder starts their job, or finds them at the cap).
 */
async function oldestStartable(tx: PgQueryable, accountId: string, now: number, maxRunning: number, wait: boolean): Promise<string | undefined> {
  if (wait) await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [accountId]);
  else {
    const { rows } = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock(hashtext($1)) AS locked', [accountId]);
    if (!rows[0]!.locked) return undefined;
  }
  const { rows } = await tx.query<{ n: number }>("SELECT count(*) AS n FROM jobs WHERE account_id = $1 AND status = 'running'", [accountId]);
  if (rows[0]!.n >= maxRunning) return undefined;
  return (await tx.query<{ id: string }>(OLDEST_QUEUED, [accountId, now])).rows[0]?.id;
}

/** Fair share: the accounts with the fewest chunks in work first, then the oldest job. */
const CHUNK_CANDIDATE = `SELECT c.job_id AS "jobId", c.chunk_index AS "chunkIndex" FROM job_chunks c JOIN jobs j ON j.id = c.job_id
  WHERE j.status = 'running' AND j.phase = 'process' AND c.status = 'pending'
    AND (c.lease_expires_at IS NULL OR c.lease_expires_at < $1)
  ORDER BY (SELECT count(*) FROM job_chunks h JOIN jobs hj ON hj.id = h.job_id
             WHERE hj.account_id = j.account_id AND h.status = 'pending' AND h.lease_expires_at >= $1),
           j.created_at, c.job_id COLLATE "C", c.chunk_index
  LIMIT 1
  FOR UPDATE OF c SKIP LOCKED`;

export function acquireChunk(db: PgDatabase, owner: string, now: number, leaseMs: number): Promise<ChunkClaim | undefined> {
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<{ jobId: string; chunkIndex: number }>(CHUNK_CANDIDATE, [now]);
    const candidate = rows[0];
    if (!candidate) return undefined;
    const taken = await tx.query<ChunkRecord & PreviousOwner>(
      `UPDATE job_chunks SET lease_owner = $3, lease_epoch = lease_epoch + 1, lease_expires_at = $4, attempts = attempts + 1
         FROM (${OLD_CHUNK_OWNER}) old
        WHERE job_id = $1 AND chunk_index = $2 RETURNING ${CHUNK_COLUMNS}, old.previous_owner AS "previousOwner"`,
      [candidate.jobId, candidate.chunkIndex, owner, now + leaseMs],
    );
    const { previousOwner, ...chunk } = taken.rows[0]!;
    return { chunk, lease: { owner, epoch: chunk.leaseEpoch }, ...(previousOwner === null ? {} : { previousOwner }) };
  });
}
