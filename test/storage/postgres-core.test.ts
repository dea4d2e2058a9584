import { afterEach, describe, expect, it } from 'vitest';
import { isAppError } from '../../src/shared/errors.js';
import type { BatchOutput, JobRecord, Lease, RowCounters } from '../../src/storage/job-records.js';
import { PgBilling } from '../../src/storage/postgres/pg-billing.js';
import { PgDatabase } from '../../src/storage/postgres/pg-database.js';
import { PgJobs } from '../../src/storage/postgres/pg-jobs.js';
import { PgResults } from '../../src/storage/postgres/pg-results.js';
import { openPostgresStore } from '../../src/storage/postgres/pg-store.js';
import type { BatchCommit, LookupCommit, StoreHooks } from '../../src/storage/store.js';
import { freshDatabase, poolScope, postgresServerUrl } from '../support/postgres-database.js';
import { BillingKeys } from '../../src/storage/billing-key.js';
import { TEST_SEAL_KEY } from '../support/test-engine.js';

const SEAL_KEY = Buffer.from(TEST_SEAL_KEY, 'base64');
const NAMES = new BillingKeys(SEAL_KEY);

const NOW = 1_700_000_000_000;
const LEASE_MS = 60_000;
const SINCE = NOW - 180 * 86_400_000;

/** End events the adapter queued, recognisable by their id and payload. */
const hooks: StoreHooks = {
  jobEnded: (job: JobRecord, now: number) => ({
    id: `evt_end_${job.id}_${job.status}_${now}`,
    event: 'bulk.completed',
    accountId: job.accountId,
    payload: { test_end: true, job: job.id, status: job.status, reason: job.reason, finished_at: job.finishedAt },
  }),
};

interface Core {
  db: PgDatabase;
  jobs: PgJobs;
  billing: PgBilling;
  results: PgResults;
}

const scope = poolScope();
afterEach(() => scope.closeAll());

/** A migrated database of the test's own, and `stores` independent pools on it, as separate processes would have. */
async function openCores(stores = 1): Promise<Core[]> {
  const { pools } = await scope.open('pg_core', stores);
  return pools.map((db) => ({ db, jobs: new PgJobs(db, hooks, NAMES), billing: new PgBilling(db, NAMES), results: new PgResults(db) }));
}

/** A job split into `chunks` chunks of `rowsPerChunk` rows, running in its process phase. */
async function processingJob(s: Core, accountId: string, id: string, chunks: number, rowsPerChunk = 10, createdAt = NOW): Promise<JobRecord> {
  await s.jobs.create({ id, accountId, type: 'gender', inputKey: `inputs/${id}.csv`, inputName: null, options: { maxErrorRate: 0.1 }, now: createdAt });
  const claim = await s.jobs.acquireJobPhase('splitter', NOW, LEASE_MS);
  expect(claim?.job.id).toBe(id);
  await s.jobs.finishSplit(
    id,
    claim!.lease,
    {
      header: ['email'],
      keyColumn: 0,
      totalRows: chunks * rowsPerChunk,
      chunks: Array.from({ length: chunks }, (_, i) => ({ firstRow: i * rowsPerChunk, rowCount: rowsPerChunk })),
    },
    NOW,
  );
  return s.jobs.require(id);
}

function output(texts: readonly string[], flags?: readonly number[]): BatchOutput {
  const rowEnds = Buffer.alloc(texts.length * 4);
  let allText = '';
  texts.forEach((t, i) => {
    allText += t;
    rowEnds.writeUInt32LE(allText.length, i * 4);
  });
  return { allText, rowEnds, rowFlags: Buffer.from(flags ?? texts.map(() => 0)) };
}

const noCounters: RowCounters = { processed: 0, found: 0, invalid: 0, duplicate: 0, error: 0, credits: 0 };

/** A checkpoint of `keys.length` rows (one gender key each, all charged) from `cursor`, as a worker would send it. */
function batch(job: JobRecord, chunkIndex: number, lease: Lease, cursor: number, keys: readonly string[], over: Partial<BatchCommit> = {}): BatchCommit {
  return {
    jobId: job.id,
    accountId: job.accountId,
    chunkIndex,
    lease,
    cursor,
    rows: keys.length,
    output: output(keys.map((k) => `${k},ok\n`)),
    counters: { ...noCounters, processed: keys.length, credits: keys.length },
    charges: { kinds: ['gender'], keys: [keys], batchId: `${chunkIndex}:${cursor}`, since: SINCE },
    cache: keys.map((key) => ({ kind: 'gender', key, result: { gender: 'female', key } })),
    outOfCredits: false,
    now: NOW,
    ...over,
  };
}

async function leaseChunk(s: Core, jobId: string, chunkIndex: number, owner = 'w1', now = NOW): Promise<Lease> {
  const claim = await s.jobs.acquireChunk(owner, now, LEASE_MS);
  expect(claim && [claim.chunk.jobId, claim.chunk.chunkIndex]).toEqual([jobId, chunkIndex]);
  return claim!.lease;
}

async function count(s: Core, sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await s.db.query<{ n: number }>(`SELECT count(*) AS n FROM ${sql}`, params);
  return rows[0]!.n;
}

async function outbox(s: Core): Promise<{ id: string; event: string; account_id: string; payload: string }[]> {
  return (await s.db.query<{ id: string; event: string; account_id: string; payload: string }>('SELECT id, event, account_id, payload FROM outbox ORDER BY id')).rows;
}

async function reserved(s: Core, jobId: string): Promise<number> {
  return count(s, 'credit_reservations WHERE job_id = $1', [jobId]);
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.unreachable('expected a rejection'),
    (e: unknown) => e,
  );
}

describe.skipIf(!postgresServerUrl())('PostgreSQL core adapter: jobs, billing and results', () => {
  describe('claims', () => {
    it('two stores claiming at once never take the same chunk, and every chunk is taken once', async () => {
      const [a, b] = await openCores(2);
      for (const acc of ['acc_a', 'acc_b', 'acc_c']) await a!.billing.createAccount({ id: acc, credits: 0, now: NOW });
      await processingJob(a!, 'acc_a', 'job_a', 8);
      await processingJob(a!, 'acc_b', 'job_b', 8);
      await processingJob(a!, 'acc_c', 'job_c', 8);

      const claims = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a! : b!).jobs.acquireChunk(`w${i}`, NOW, LEASE_MS)));

      const taken = claims.filter((c) => c !== undefined);
      const ids = taken.map((c) => `${c.chunk.jobId}/${c.chunk.chunkIndex}`);
      expect(new Set(ids).size).toBe(24);
      expect(ids).toHaveLength(24);
      expect(taken.every((c) => c.lease.epoch === 1 && c.chunk.attempts === 1)).toBe(true);
      expect(await count(a!, "job_chunks WHERE lease_epoch = 1 AND attempts = 1 AND lease_owner IS NOT NULL")).toBe(24);
    });

    it('hands the next chunk to the account with the fewest chunks in work, then to the older job', async () => {
      const [s] = await openCores();
      await s!.billing.createAccount({ id: 'acc_big', credits: 0, now: NOW });
      await s!.billing.createAccount({ id: 'acc_small', credits: 0, now: NOW });
      await processingJob(s!, 'acc_big', 'job_big', 3, 10, NOW - 2);
      await processingJob(s!, 'acc_small', 'job_small', 2, 10, NOW - 1);

      const order: string[] = [];
      for (let i = 0; i < 5; i++) {
        const claim = await s!.jobs.acquireChunk(`w${i}`, NOW, LEASE_MS);
        order.push(`${claim!.chunk.jobId}/${claim!.chunk.chunkIndex}`);
      }

      expect(order).toEqual(['job_big/0', 'job_small/0', 'job_big/1', 'job_small/1', 'job_big/2']);
      expect(await s!.jobs.acquireChunk('w5', NOW, LEASE_MS)).toBeUndefined();
    });

    it('two stores starting queued jobs at once start no more of an account\'s jobs than the cap allows', async () => {
      const [a, b] = await openCores(2);
      await a!.billing.createAccount({ id: 'acc_1', credits: 0, now: NOW });
      await a!.billing.createAccount({ id: 'acc_2', credits: 0, now: NOW });
      for (let i = 0; i < 4; i++) {
        for (const acc of ['acc_1', 'acc_2']) {
          await a!.jobs.create({ id: `job_${acc}_${i}`, accountId: acc, type: 'gender', inputKey: 'in', inputName: null, options: {}, now: NOW + i });
        }
      }

      const claims = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? a! : b!).jobs.acquireJobPhase(`w${i}`, NOW, LEASE_MS, 2)));

      const started = claims.filter((c) => c !== undefined).map((c) => c.job);
      expect(new Set(started.map((j) => j.id)).size).toBe(started.length);
      expect(started.filter((j) => j.accountId === 'acc_1').length).toBeLessThanOrEqual(2);
      expect(started.filter((j) => j.accountId === 'acc_2').length).toBeLessThanOrEqual(2);
      // A claim that lost a race may come back empty; the next polls start what the cap still allows.
      while (await a!.jobs.acquireJobPhase('drain', NOW, LEASE_MS, 2));
      const running = await a!.db.query<{ account_id: string; n: number }>(
        "SELECT account_id, count(*) AS n FROM jobs WHERE status = 'running' GROUP BY account_id ORDER BY account_id",
      );
      expect(running.rows).toEqual([{ account_id: 'acc_1', n: 2 }, { account_id: 'acc_2', n: 2 }]);
    });
  });

  describe('commitBatch', () => {
    it('writes the outputs, charges, cache and counters of a batch in one step', async () => {
      const [s] = await openCores();
      await s!.billing.createAccount({ id: 'acc_1', credits: 10, now: NOW });
      const job = await processingJob(s!, 'acc_1', 'job_1', 1);
      const lease = await leaseChunk(s!, 'job_1', 0);
      await s!.billing.reserve('acc_1', 'job_1', 0, 3);

      const result = await s!.jobs.commitBatch(batch(job, 0, lease, 0, ['a@x.io', 'b@x.io', 'c@x.io']));

      expect(result).toEqual({ ok: true, paused: false, failed: false });
      expect((await s!.billing.requireAccount('acc_1')).credits).toBe(7);
      expect(await s!.billing.chargedKeys('acc_1', 'job_1')).toEqual(['a@x.io', 'b@x.io', 'c@x.io'].map((k) => NAMES.name('gender', k)).sort());
      expect(await s!.billing.chargeCountForJob('job_1')).toBe(3);
      expect((await s!.jobs.chunk('job_1', 0))!.cursor).toBe(3);
      expect(await reserved(s!, 'job_1')).toBe(0);
      const updated = await s!.jobs.require('job_1');
      expect([updated.processedRows, updated.creditsUsed]).toEqual([3, 3]);
      expect(await s!.results.getMany('gender', ['a@x.io', 'z@x.io'], SINCE)).toEqual(new Map([['a@x.io', { gender: 'female', key: 'a@x.io' }]]));
      // The same batch again (a replay after a crash, from a lease that still holds) cannot charge twice.
      const replay = await rejection(s!.jobs.commitBatch(batch(job, 0, lease, 3, ['d@x.io'], { charges: { kinds: ['gender'], keys: [['d@x.io']], batchId: '0:0', since: SINCE } })));
      expect(isAppError(replay, 'internal')).toBe(true);
      expect((await s!.billing.requireAccount('acc_1')).credits).toBe(7);
      expect((await s!.jobs.chunk('job_1', 0))!.cursor).toBe(3);
    });

    it('a late commit from a lease taken over since is refused with lease_lost and writes nothing', async () => {
      const [s] = await openCores();
      await s!.billing.createAccount({ id: 'acc_1', credits: 10, now: NOW });
      const job = await processingJob(s!, 'acc_1', 'job_1', 1);
      const stale = await leaseChunk(s!, 'job_1', 0, 'frozen');
      await s!.billing.reserve('acc_1', 'job_1', 0, 2);
      // The frozen worker's lease runs out; another worker takes the chunk over.
      const fresh = await leaseChunk(s!, 'job_1', 0, 'w2', NOW + LEASE_MS + 1);
      expect(fresh.epoch).toBe(stale.epoch + 1);

      const error = await rejection(s!.jobs.commitBatch(batch(job, 0, stale, 0, ['a@x.io', 'b@x.io'], { outOfCredits: true })));

      expect(isAppError(error, 'lease_lost')).toBe(true);
      expect((await s!.billing.requireAccount('acc_1')).credits).toBe(10);
      expect((await s!.billing.ledger('acc_1')).map((l) => l.reason)).toEqual(['grant']);
      expect(await count(s!, 'billing_cache')).toBe(0);
      expect(await count(s!, 'result_cache')).toBe(0);
      expect(await count(s!, 'chunk_outputs')).toBe(0);
      expect(await reserved(s!, 'job_1')).toBe(1);
      const after = await s!.jobs.require('job_1');
      expect([after.status, after.processedRows, after.creditsUsed]).toEqual(['running', 0, 0]);
      expect((await s!.jobs.chunk('job_1', 0))!.cursor).toBe(0);
      // The same commit from the current lease goes through.
      expect(await s!.jobs.commitBatch(batch(job, 0, fresh, 0, ['a@x.io', 'b@x.io']))).toEqual({ ok: true, paused: false, failed: false });
    });

    it('a commit whose cursor moved meanwhile is refused as well', async () => {
      const [s] = await openCores();
      await s!.billing.createAccount({ id: 'acc_1', credits: 10, now: NOW });
      const job = await processingJob(s!, 'acc_1', 'job_1', 1);
      const lease = await leaseChunk(s!, 'job_1', 0);
      await s!.jobs.commitBatch(batch(job, 0, lease, 0, ['a@x.io']));

      const error = await rejection(s!.jobs.commitBatch(batch(job, 0, lease, 0, ['b@x.io'], { charges: { kinds: ['gender'], keys: [['b@x.io']], batchId: 'other', since: SINCE } })));

      expect(isAppError(error, 'lease_lost')).toBe(true);
      expect((await s!.billing.requireAccount('acc_1')).credits).toBe(9);
    });

    it('two jobs of one account committing the same key at once from two stores: one charges it, the other is told it is billed', async () => {
      const [a, b] = await openCores(2);
      await a!.billing.createAccount({ id: 'acc_1', credits: 100, now: NOW });
      const jobs: JobRecord[] = [];
      for (let i = 0; i < 6; i++) jobs.push(await processingJob(a!, 'acc_1', `job_${i}`, 1, 10, NOW + i));
      const leases: Lease[] = [];
      for (const j of jobs) leases.push(await leaseChunk(a!, j.id, 0, `w_${j.id}`));

      const results = await Promise.all(
        jobs.map((j, i) => (i % 2 === 0 ? a! : b!).jobs.commitBatch(batch(j, 0, leases[i]!, 0, ['shared@x.io', `own${i}@x.io`]))),
      );

      const winners = results.filter((r) => r.ok);
      expect(winners).toHaveLength(1);
      for (const refused of results.filter((r) => !r.ok)) {
        expect(refused.billed).toHaveLength(1);
        expect([...refused.billed[0]!]).toEqual(['shared@x.io']);
        expect(refused.balance).toBe(98);
      }
      expect((await a!.billing.requireAccount('acc_1')).credits).toBe(98);
      expect(await count(a!, "ledger WHERE reason = 'charge'")).toBe(1);
      expect(await count(a!, 'chunk_outputs')).toBe(1);
      expect(await count(a!, 'job_chunks WHERE cursor > 0')).toBe(1);
    });

    it('commits racing for the last credits never take the balance below 0', async () => {
      const [a, b] = await openCores(2);
      await a!.billing.createAccount({ id: 'acc_1', credits: 5, now: NOW });
      const jobs: JobRecord[] = [];
      for (let i = 0; i < 8; i++) jobs.push(await processingJob(a!, 'acc_1', `job_${i}`, 1, 10, NOW + i));
      const leases: Lease[] = [];
      for (const j of jobs) leases.push(await leaseChunk(a!, j.id, 0, `w_${j.id}`));

      const results = await Promise.all(
        jobs.map((j, i) => (i % 2 === 0 ? a! : b!).jobs.commitBatch(batch(j, 0, leases[i]!, 0, [`x${i}@x.io`, `y${i}@x.io`]))),
      );

      expect(results.filter((r) => r.ok)).toHaveLength(2);
      for (const refused of results.filter((r) => !r.ok)) expect([refused.balance, refused.billed.every((s) => s.size === 0)]).toEqual([1, true]);
      expect((await a!.billing.requireAccount('acc_1')).credits).toBe(1);
      const { rows } = await a!.db.query<{ n: number }>('SELECT SUM(delta)::bigint AS n FROM ledger');
      expect(rows[0]!.n).toBe(1);
    });

    it('out of credits: the job pauses with insufficient_credits and all its reservations go, with no end event', async () => {
      const [s] = await openCores();
      await s!.billing.createAccount({ id: 'acc_1', credits: 1, now: NOW });
      const job = await processingJob(s!, 'acc_1', 'job_1', 2);
      const lease = await leaseChunk(s!, 'job_1', 0);
      await s!.billing.reserve('acc_1', 'job_1', 0, 1);
      await s!.db.query("INSERT INTO credit_reservations (job_id, chunk_index, account_id, amount) VALUES ('job_1', 1, 'acc_1', 0)");

      const result = await s!.jobs.commitBatch(batch(job, 0, lease, 0, ['a@x.io'], { outOfCredits: true }));

      expect(result).toEqual({ ok: true, paused: true, failed: false });
      const paused = await s!.jobs.require('job_1');
      expect([paused.status, paused.reason, paused.processedRows]).toEqual(['paused', 'insufficient_credits', 1]);
      expect(await reserved(s!, 'job_1')).toBe(0);
      expect(await outbox(s!)).toEqual([]);
      expect((await s!.billing.requireAccount('acc_1')).credits).toBe(0);
    });

    it('past the failure budget the job fails with error_budget_exceeded, its reservations go and its end event is queued', async () => {
      const [s] = await openCores();
      await s!.billing.createAccount({ id: 'acc_1', credits: 10, now: NOW });
      // 20 rows at 10%: two error rows are within the budget, the third is one too many.
      const job = await processingJob(s!, 'acc_1', 'job_1', 2);
      const lease = await leaseChunk(s!, 'job_1', 0);
      const budget = { maxErrorRate: 0.1, message: 'more than 2 rows failed' };
      const errors = (n: number, at: number): Partial<BatchCommit> => ({
        rows: n,
        output: output(Array.from({ length: n }, (_, i) => `e${at + i},error\n`), Array.from({ length: n }, () => 2)),
        counters: { ...noCounters, processed: n, error: n },
        charges: { kinds: ['gender'], keys: [[]], batchId: `0:${at}`, since: SINCE },
        cache: [],
        errorBudget: budget,
        now: NOW + at,
      });

      expect(await s!.jobs.commitBatch(batch(job, 0, lease, 0, [], errors(2, 0)))).toEqual({ ok: true, paused: false, failed: false });
      expect(await s!.jobs.status('job_1')).toBe('running');
      await s!.billing.reserve('acc_1', 'job_1', 1, 4);

      const result = await s!.jobs.commitBatch(batch(job, 0, lease, 2, [], errors(1, 2)));

      expect(result).toEqual({ ok: true, paused: false, failed: true });
      const failed = await s!.jobs.require('job_1');
      expect([failed.status, failed.reason, failed.errorMessage, failed.errorRows, failed.finishedAt]).toEqual([
        'failed',
        'error_budget_exceeded',
        'more than 2 rows failed',
        3,
        NOW + 2,
      ]);
      expect(await reserved(s!, 'job_1')).toBe(0);
      const events = await outbox(s!);
      expect(events.map((e) => [e.id, e.event, e.account_id])).toEqual([[`evt_end_job_1_failed_${NOW + 2}`, 'bulk.completed', 'acc_1']]);
      expect(JSON.parse(events[0]!.payload)).toEqual({ test_end: true, job: 'job_1', status: 'failed', reason: 'error_budget_exceeded', finished_at: NOW + 2 });
      // The rows that crossed the line are committed: a retry of the failed rows starts from them.
      expect((await s!.jobs.chunk('job_1', 0))!.cursor).toBe(3);
    });
  });

  describe('job state changes', () => {
    it('leaving running releases the job\'s reservations; only a terminal status queues the end event', async () => {
      const [s] = await openCores();
      await s!.billing.createAccount({ id: 'acc_1', credits: 10, now: NOW });
      await processingJob(s!, 'acc_1', 'job_1', 2);
      await s!.billing.reserve('acc_1', 'job_1', 0, 3);
      await s!.billing.reserve('acc_1', 'job_1', 1, 3);

      const paused = await s!.jobs.transition('job_1', 'paused', { reason: 'paused_by_operator', now: NOW + 1 });
      expect([paused.status, paused.reason, paused.finishedAt]).toEqual(['paused', 'paused_by_operator', null]);
      expect(await reserved(s!, 'job_1')).toBe(0);
      expect(await s!.billing.available('acc_1')).toBe(10);
      expect(await outbox(s!)).toEqual([]);

      await s!.jobs.transition('job_1', 'running', { now: NOW + 2 });
      await s!.billing.reserve('acc_1', 'job_1', 0, 3);
      expect(await s!.billing.available('acc_1')).toBe(7);
      expect(await reserved(s!, 'job_1')).toBe(1);
      expect(await outbox(s!)).toEqual([]);

      const cancelled = await s!.jobs.transition('job_1', 'cancelled', { reason: 'cancelled', now: NOW + 3 });
      expect([cancelled.status, cancelled.finishedAt]).toEqual(['cancelled', NOW + 3]);
      expect(await reserved(s!, 'job_1')).toBe(0);
      const events = await outbox(s!);
      expect(events.map((e) => e.id)).toEqual([`evt_end_job_1_cancelled_${NOW + 3}`]);
      expect(JSON.parse(events[0]!.payload)).toMatchObject({ status: 'cancelled', reason: 'cancelled', finished_at: NOW + 3 });

      const refused = await rejection(s!.jobs.transition('job_1', 'paused', { now: NOW + 4 }));
      expect(isAppError(refused, 'invalid_state')).toBe(true);
      expect((refused as Error).message).toBe('job job_1 is cancelled and cannot become paused');
      expect(await outbox(s!)).toHaveLength(1);
    });

    it('transitionFrom changes nothing when the job is no longer where the caller saw it', async () => {
      const [s] = await openCores();
      await s!.billing.createAccount({ id: 'acc_1', credits: 10, now: NOW });
      await processingJob(s!, 'acc_1', 'job_1', 1);
      await s!.billing.reserve('acc_1', 'job_1', 0, 3);

      expect(await s!.jobs.transitionFrom('paused', 'job_1', 'failed', { now: NOW + 1 })).toBeUndefined();
      expect(await s!.jobs.transitionFrom('running', 'job_missing', 'failed', { now: NOW + 1 })).toBeUndefined();
      expect(await s!.jobs.status('job_1')).toBe('running');
      expect(await reserved(s!, 'job_1')).toBe(1);

      const failed = await s!.jobs.transitionFrom('running', 'job_1', 'failed', { reason: 'boom', message: 'it broke', now: NOW + 2 });
      expect([failed?.status, failed?.errorMessage]).toEqual(['failed', 'it broke']);
      expect(await reserved(s!, 'job_1')).toBe(0);
      expect((await outbox(s!)).map((e) => e.id)).toEqual([`evt_end_job_1_failed_${NOW + 2}`]);
    });

    it('resume runs a paused job again with clean failure counts, and refuses a job that is neither paused nor failed', async () => {
      const [s] = await openCores();
      await s!.billing.createAccount({ id: 'acc_1', credits: 10, now: NOW });
      await processingJob(s!, 'acc_1', 'job_1', 1);
      const lease = await leaseChunk(s!, 'job_1', 0);
      expect(await s!.jobs.recordFailure({ jobId: 'job_1', chunkIndex: 0 }, lease, NOW + 1)).toBe(1);
      expect(await s!.jobs.recordFailure({ jobId: 'job_1', chunkIndex: 0 }, lease, NOW + 2)).toBe(2);
      expect(await s!.jobs.recordFailure({ jobId: 'job_1', chunkIndex: 0 }, { ...lease, epoch: lease.epoch - 1 }, NOW + 3)).toBe(0);

      const refused = await rejection(s!.jobs.resume('job_1', NOW));
      expect(isAppError(refused, 'invalid_state')).toBe(true);
      expect((refused as Error).message).toBe('job job_1 is running; only paused or failed jobs can be resumed');

      await s!.jobs.pauseForProvider('job_1', 0, 'the lookup provider is unavailable', NOW + 5);
      const paused = await s!.jobs.require('job_1');
      expect([paused.status, paused.reason, paused.errorMessage]).toEqual(['paused', 'provider_unavailable', 'the lookup provider is unavailable']);
      expect(await s!.jobs.pausedSince('provider_unavailable', NOW + 5)).toEqual(['job_1']);
      expect(await s!.jobs.pausedSince('provider_unavailable', NOW + 4)).toEqual([]);

      const resumed = await s!.jobs.resume('job_1', NOW + 6);
      expect([resumed.status, resumed.reason, resumed.errorMessage]).toEqual(['running', null, null]);
      expect(await count(s!, 'job_chunks WHERE failures > 0')).toBe(0);
      expect(await outbox(s!)).toEqual([]);
    });

    it('the last two chunks finishing at once from two stores move the job to assembly', async () => {
      const [a, b] = await openCores(2);
      await a!.billing.createAccount({ id: 'acc_1', credits: 100, now: NOW });
      const jobs: JobRecord[] = [];
      for (let i = 0; i < 20; i++) jobs.push(await processingJob(a!, 'acc_1', `job_${i}`, 2, 1, NOW + i));
      const finishing: (() => Promise<void>)[] = [];
      for (const job of jobs) {
        for (const chunkIndex of [0, 1]) {
          const lease = await leaseChunk(a!, job.id, chunkIndex, `w_${job.id}_${chunkIndex}`);
          await a!.jobs.commitBatch(batch(job, chunkIndex, lease, 0, [`${job.id}_${chunkIndex}@x.io`]));
          const store = chunkIndex === 0 ? a! : b!;
          finishing.push(() => store.jobs.completeChunk(job.id, chunkIndex, lease, null, NOW + 10));
        }
      }

      await Promise.all(finishing.map((finish) => finish()));

      for (const job of jobs) expect((await a!.jobs.require(job.id)).phase).toBe('assemble');
      expect(await count(a!, 'chunk_outputs')).toBe(0);
      const assembly = await a!.jobs.acquireJobPhase('assembler', NOW + 10, LEASE_MS);
      expect(assembly?.job.id).toBe('job_0');
      await a!.jobs.complete('job_0', assembly!.lease, { allKey: 'a', foundKey: 'f', errorsKey: 'e' }, NOW + 11);
      const done = await a!.jobs.require('job_0');
      expect([done.status, done.phase, done.resultErrorsKey, done.finishedAt]).toEqual(['completed', 'done', 'e', NOW + 11]);
      expect((await outbox(a!)).map((e) => e.id)).toEqual([`evt_end_job_0_completed_${NOW + 11}`]);
      const late = await rejection(a!.jobs.complete('job_0', assembly!.lease, { allKey: 'a', foundKey: 'f', errorsKey: 'e' }, NOW + 12));
      expect(isAppError(late, 'lease_lost')).toBe(true);
      expect(await outbox(a!)).toHaveLength(1);
    });
    it('retry-failed sends a finished job\'s failed rows, kept as row flags, back to work as a new pass', async () => {
      const [s] = await openCores();
      await s!.billing.createAccount({ id: 'acc_1', credits: 10, now: NOW });
      const job = await processingJob(s!, 'acc_1', 'job_1', 1, 3);
      const lease = await leaseChunk(s!, 'job_1', 0);
      const flags = [1, 2, 2];
      await s!.jobs.commitBatch(
        batch(job, 0, lease, 0, ['a@x.io'], {
          rows: 3,
          output: output(['a,ok\n', 'b,error\n', 'c,error\n'], flags),
          counters: { ...noCounters, processed: 3, found: 1, error: 2, credits: 1 },
        }),
      );
      await s!.jobs.completeChunk('job_1', 0, lease, Buffer.from(flags), NOW + 1);
      const done = (await s!.jobs.chunk('job_1', 0))!;
      expect([done.status, done.rowFlags]).toEqual(['done', Buffer.from(flags)]);
      const assembly = await s!.jobs.acquireJobPhase('assembler', NOW + 1, LEASE_MS);
      await s!.jobs.complete('job_1', assembly!.lease, { allKey: 'a', foundKey: 'f', errorsKey: 'e' }, NOW + 2);

      expect(await s!.jobs.retryFailed('job_1', NOW + 3)).toBe(2);

      const chunk = (await s!.jobs.chunk('job_1', 0))!;
      expect([chunk.status, chunk.pass, chunk.passRows, chunk.rowCount, chunk.cursor]).toEqual(['pending', 1, 2, 3, 0]);
      const reopened = await s!.jobs.require('job_1');
      expect([reopened.status, reopened.phase, reopened.finishedAt]).toEqual(['running', 'process', null]);
      const again = await rejection(s!.jobs.retryFailed('job_1', NOW + 4));
      expect([isAppError(again, 'invalid_state'), (again as Error).message]).toEqual([
        true,
        "job job_1 is running; only a completed or failed job's failed rows can be retried",
      ]);
    });
  });

  describe('outputs', () => {
    it('returns a chunk\'s batches in row order, one query per batch', async () => {
      const [s] = await openCores();
      await s!.billing.createAccount({ id: 'acc_1', credits: 1000, now: NOW });
      const job = await processingJob(s!, 'acc_1', 'job_1', 1, 200);
      const lease = await leaseChunk(s!, 'job_1', 0);
      const sizes = [2, 8, 90, 5];
      let cursor = 0;
      for (const size of sizes) {
        const keys = Array.from({ length: size }, (_, i) => `r${cursor + i}@x.io`);
        await s!.jobs.commitBatch(batch(job, 0, lease, cursor, keys, { output: output(keys.map((k) => `${k}\n`), keys.map((_, i) => i % 3)) }));
        cursor += size;
      }

      const read: { first: string; rows: number; flags: number[] }[] = [];
      for await (const out of s!.jobs.outputs('job_1', 0)) {
        expect(Buffer.isBuffer(out.rowFlags) && Buffer.isBuffer(out.rowEnds)).toBe(true);
        expect([out.foundText, out.errorsText]).toEqual(['', '']);
        read.push({ first: out.allText.split('\n')[0]!, rows: out.rowEnds!.length / 4, flags: [...out.rowFlags.subarray(0, 3)] });
      }

      expect(read.map((r) => [r.first, r.rows])).toEqual([['r0@x.io', 2], ['r2@x.io', 8], ['r10@x.io', 90], ['r100@x.io', 5]]);
      expect(read[2]!.flags).toEqual([0, 1, 2]);

      // Nothing is read ahead: rows removed after the first batch was handed out are not seen.
      const lazy = s!.jobs.outputs('job_1', 0)[Symbol.asyncIterator]();
      expect((await lazy.next()).value.allText.startsWith('r0@x.io')).toBe(true);
      await s!.db.query('DELETE FROM chunk_outputs WHERE first_row > 0');
      expect((await lazy.next()).done).toBe(true);
    });
  });

  describe('billing', () => {
    it('refuses a second account with a taken id or the same email in another case', async () => {
      const [s] = await openCores();
      const account = await s!.billing.createAccount({ id: 'acc_1', email: 'Ann@Example.com', passwordHash: 'h', credits: 5, now: NOW });
      expect(account).toEqual({ id: 'acc_1', email: 'Ann@Example.com', credits: 5, status: 'active', rateLimit: null, createdAt: NOW });
      expect((await s!.billing.ledger('acc_1')).map((l) => [l.reason, l.delta])).toEqual([['grant', 5]]);

      const sameId = await rejection(s!.billing.createAccount({ id: 'acc_1', credits: 0, now: NOW }));
      expect([isAppError(sameId, 'account_exists'), (sameId as { statusCode?: number }).statusCode]).toEqual([true, 409]);
      const sameEmail = await rejection(s!.billing.createAccount({ id: 'acc_2', email: 'ann@example.COM', credits: 0, now: NOW }));
      expect((sameEmail as Error).message).toBe('an account with email ann@example.COM exists already');
      expect((await s!.billing.credentials('ANN@example.com'))?.id).toBe('acc_1');
      expect(isAppError(await rejection(s!.billing.requireAccount('acc_none')), 'account_not_found')).toBe(true);
      expect(isAppError(await rejection(s!.billing.addCredits('acc_1', 1.5, 'topup', NOW)), 'bad_argument')).toBe(true);
      expect((await s!.billing.addCredits('acc_1', 3, 'topup', NOW + 1)).credits).toBe(8);
    });

    it('single lookups racing for one repeat-free key charge it once', async () => {
      const [a, b] = await openCores(2);
      await a!.billing.createAccount({ id: 'acc_1', credits: 10, now: NOW });

      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          (i % 2 === 0 ? a! : b!).billing.commitLookup({
            accountId: 'acc_1',
            kind: 'gender',
            charge: { type: 'repeat_free', key: 'ann@x.io', since: SINCE, batchId: `b${i}` },
            cache: [{ kind: 'gender', key: 'ann@x.io', result: { gender: 'female' } }],
            now: NOW,
          }),
        ),
      );

      expect(results.map((r) => (r.ok ? r.credits : -1)).sort()).toEqual([0, 0, 0, 0, 0, 1]);
      expect((await a!.billing.requireAccount('acc_1')).credits).toBe(9);
      expect(await a!.billing.freshlyBilled('acc_1', 'gender', ['ann@x.io', 'bob@x.io'], SINCE)).toEqual(new Set(['ann@x.io']));
      expect(await a!.billing.chargedKeys('acc_1', 'single')).toEqual([NAMES.name('gender', 'ann@x.io')]);
    });

    it('a flat charge the balance cannot cover writes nothing', async () => {
      const [s] = await openCores();
      await s!.billing.createAccount({ id: 'acc_1', credits: 2, now: NOW });
      const flat = (amount: number, callId: string) =>
        s!.billing.commitLookup({ accountId: 'acc_1', kind: 'company', charge: { type: 'flat', amount, callId }, cache: [{ kind: 'company', key: callId, result: 1 }], now: NOW + 1 });

      expect(await flat(3, 'c1')).toEqual({ ok: false });
      expect(await flat(2, 'c2')).toEqual({ ok: true, credits: 2 });
      expect(await flat(0, 'c3')).toEqual({ ok: true, credits: 0 });
      expect((await s!.billing.requireAccount('acc_1')).credits).toBe(0);
      expect((await s!.billing.ledger('acc_1')).map((l) => [l.reason, l.delta, l.jobId])).toEqual([['grant', 2, null], ['charge', -2, null]]);
      expect([...(await s!.results.getMany('company', ['c1', 'c2', 'c3'], SINCE)).keys()].sort()).toEqual(['c2', 'c3']);
    });
  });
  describe('the composed store', () => {
    it('migrates on open, answers ping on one pool, and refuses queries once closed', async () => {
      const database = scope.database(await freshDatabase('pg_core'));
      const store = await openPostgresStore({ url: database.url, poolSize: 3, sealKey: SEAL_KEY }, hooks);
      let closed = false;
      try {
        expect(store.kind).toBe('postgres');
        await expect(store.ping()).resolves.toBeUndefined();
        await store.billing.createAccount({ id: 'acc_1', credits: 3, now: NOW });
        await store.jobs.create({ id: 'job_1', accountId: 'acc_1', type: 'gender', inputKey: 'in', inputName: 'in.csv', options: { column: 'email' }, now: NOW });
        const job = await store.jobs.require('job_1');
        expect([job.options, job.header, job.inputName, job.processedRows]).toEqual([{ column: 'email' }, null, 'in.csv', 0]);
        expect(isAppError(await rejection(store.jobs.require('job_none')), 'job_not_found')).toBe(true);
        expect((await store.jobs.list({ accountId: 'acc_1', limit: 10, offset: 0 })).total).toBe(1);
        await store.close();
        closed = true;
        await expect(store.ping()).rejects.toThrow();
      } finally {
        if (!closed) await store.close();
      }
      // A second open of a migrated database applies nothing again.
      const again = await openPostgresStore({ url: database.url, poolSize: 1, sealKey: SEAL_KEY }, hooks);
      expect((await again.billing.requireAccount('acc_1')).credits).toBe(3);
      await again.close();
    });

    it('a single lookup\'s event is queued only for an account with an active webhook that subscribes to it', async () => {
      const database = scope.database(await freshDatabase('pg_core'));
      const store = await openPostgresStore({ url: database.url, poolSize: 3, sealKey: SEAL_KEY }, hooks);
      try {
        for (const acc of ['acc_hooked', 'acc_plain', 'acc_paused', 'acc_other']) await store.billing.createAccount({ id: acc, credits: 5, now: NOW });
        const webhook = (id: string, accountId: string, events: string[], isActive: boolean) =>
          store.webhooks.insert({ id, accountId, kind: 'generic', url: 'https://127.0.0.1/hook', events, description: '', isActive, secretSealed: null, telegramChat: null, telegramTokenSealed: null, now: NOW });
        await webhook('wh_1', 'acc_hooked', ['bulk.completed', 'lookup.completed'], true);
        await webhook('wh_2', 'acc_paused', ['lookup.completed'], false);
        await webhook('wh_3', 'acc_other', ['bulk.completed'], true);
        const lookup = (accountId: string): LookupCommit => ({
          accountId,
          kind: 'gender',
          charge: { type: 'repeat_free', key: 'ann@x.io', since: SINCE, batchId: `b_${accountId}` },
          cache: [],
          event: (credits) => ({ id: `evt_lookup_${accountId}`, event: 'lookup.completed', accountId, payload: { credits } }),
          now: NOW,
        });

        for (const acc of ['acc_hooked', 'acc_plain', 'acc_paused', 'acc_other']) expect(await store.billing.commitLookup(lookup(acc))).toEqual({ ok: true, credits: 1 });

        const inspect = scope.pool(new PgDatabase({ url: database.url, poolSize: 1 }));
        const { rows } = await inspect.query<{ id: string; payload: string }>('SELECT id, payload FROM outbox');
        expect(rows).toEqual([{ id: 'evt_lookup_acc_hooked', payload: '{"credits":1}' }]);
      } finally {
        await store.close();
      }
    });
  });
});
