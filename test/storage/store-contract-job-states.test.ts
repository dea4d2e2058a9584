import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JOB_STATUSES, TERMINAL_STATUSES, type JobStatus } from '../../src/storage/job-states.js';
import { ROW_FLAGS, type Lease } from '../../src/storage/job-records.js';
import type { Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { batch, claimChunk, endEvents, LEASE_MS, newAccount, newJob, NOW, openTestStore, output, outputText, processingJob, subscribe, type TestStore } from '../support/test-store.js';

const KEYS = { allKey: 'results/job_1/all.csv', foundKey: 'results/job_1/found.csv', errorsKey: 'results/job_1/errors.csv' };
const STATUSES = Object.values(JOB_STATUSES);

describe.each(TEST_STORES)('Store contract on %s: job ends and states', (kind) => {
  let opened: TestStore;
  let store: Store;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
  });
  afterEach(() => opened.close());

  /**
   * Commits `flags.length` rows to a leased chunk in one batch and marks it done with those flags.
   * A retry pass (`pass` > 0) counts no new rows and has batch ids of its own, as processBatch does.
   */
  async function finishChunk(accountId: string, jobId: string, chunkIndex: number, lease: Lease, flags: number[], pass = 0) {
    const errors = flags.filter((f) => f & ROW_FLAGS.error).length;
    await store.jobs.commitBatch(
      batch(
        { jobId, accountId, chunkIndex, lease, cursor: 0, rows: flags.length },
        {
          output: output(flags.map((f, i) => [`${chunkIndex}:${i}\r\n`, f])),
          counters: { processed: pass === 0 ? flags.length : 0, found: 0, invalid: 0, duplicate: 0, error: errors, credits: 0 },
          ...(pass > 0 ? { charges: { batchId: `${chunkIndex}:0:pass${pass}` } } : {}),
        },
      ),
    );
    await store.jobs.completeChunk(jobId, chunkIndex, lease, errors > 0 ? Buffer.from(flags) : null, NOW);
  }

  describe('chunk ends', () => {
    it('marks a fully committed chunk done, drops its outputs, keeps its flags, and moves the job to assembly after its last chunk, once', async () => {
      const account = await newAccount(store);
      const job = await processingJob(store, account.id, 'job_1', [2, 2]);
      const first = await claimChunk(store, job.id, 0, 'worker-a');
      const second = await claimChunk(store, job.id, 1, 'worker-b');
      await finishChunk(account.id, job.id, 0, first, [0, ROW_FLAGS.error]);
      expect(await store.jobs.chunk(job.id, 0)).toMatchObject({ status: 'done', cursor: 2, rowFlags: Buffer.from([0, ROW_FLAGS.error]) });
      expect(await outputText(store, job.id, 0)).toBe('');
      expect(await store.jobs.require(job.id)).toMatchObject({ phase: 'process' });
      await expect(() => store.jobs.completeChunk(job.id, 0, first, null, NOW)).rejects.toMatchObject({ code: 'lease_lost' });

      await finishChunk(account.id, job.id, 1, second, [ROW_FLAGS.found, 0]);
      expect(await store.jobs.chunk(job.id, 1)).toMatchObject({ status: 'done', rowFlags: null });
      expect(await store.jobs.require(job.id)).toMatchObject({ status: 'running', phase: 'assemble' });
      const assembly = await store.jobs.acquireJobPhase('worker-c', NOW, LEASE_MS);
      expect(assembly).toMatchObject({ job: { id: job.id, phase: 'assemble' } });
      expect(await store.jobs.acquireJobPhase('worker-d', NOW, LEASE_MS)).toBeUndefined();
    });

    it('refuses to end a chunk whose rows are not all committed, or under a lost lease', async () => {
      const account = await newAccount(store);
      const job = await processingJob(store, account.id, 'job_1', [3]);
      const stale = await claimChunk(store, job.id, 0, 'worker-a');
      await store.jobs.commitBatch(batch({ jobId: job.id, accountId: account.id, chunkIndex: 0, lease: stale, cursor: 0, rows: 2 }));
      await expect(() => store.jobs.completeChunk(job.id, 0, stale, null, NOW)).rejects.toMatchObject({ code: 'lease_lost' });
      const current = (await store.jobs.acquireChunk('worker-b', NOW + LEASE_MS + 1, LEASE_MS))!.lease;
      await store.jobs.commitBatch(batch({ jobId: job.id, accountId: account.id, chunkIndex: 0, lease: current, cursor: 2, rows: 1 }));
      await expect(() => store.jobs.completeChunk(job.id, 0, stale, null, NOW)).rejects.toMatchObject({ code: 'lease_lost' });
      expect(await store.jobs.chunk(job.id, 0)).toMatchObject({ status: 'pending' });
      expect(await outputText(store, job.id, 0)).toBe('0:r0\r\n0:r1\r\n0:r2\r\n');
      await store.jobs.completeChunk(job.id, 0, current, null, NOW);
      expect(await store.jobs.require(job.id)).toMatchObject({ phase: 'assemble' });
    });

    it('completes the job under the assembly lease, with its result keys and one end event; a lost lease completes nothing', async () => {
      const account = await newAccount(store);
      const webhook = await subscribe(store, account.id);
      const job = await processingJob(store, account.id, 'job_1', [1]);
      await finishChunk(account.id, job.id, 0, await claimChunk(store, job.id, 0), [0]);
      const stale = (await store.jobs.acquireJobPhase('worker-a', NOW, LEASE_MS))!.lease;
      const current = (await store.jobs.acquireJobPhase('worker-b', NOW + LEASE_MS + 1, LEASE_MS))!.lease;
      await expect(() => store.jobs.complete(job.id, stale, KEYS, NOW + LEASE_MS + 2)).rejects.toMatchObject({ code: 'lease_lost' });
      expect(await store.jobs.status(job.id)).toBe('running');
      await store.jobs.complete(job.id, current, KEYS, NOW + LEASE_MS + 3);
      expect(await store.jobs.require(job.id)).toMatchObject({
        status: 'completed',
        phase: 'done',
        reason: null,
        resultAllKey: KEYS.allKey,
        resultFoundKey: KEYS.foundKey,
        resultErrorsKey: KEYS.errorsKey,
        finishedAt: NOW + LEASE_MS + 3,
      });
      expect(await store.jobs.liveLeaseOwners(NOW + LEASE_MS + 3)).toEqual([]);
      await expect(() => store.jobs.complete(job.id, current, KEYS, NOW + LEASE_MS + 4)).rejects.toMatchObject({ code: 'lease_lost' });
      expect(await endEvents(store, webhook)).toEqual([{ job: job.id, status: 'completed' }]);
    });

    it('pauses a running job for the provider, releasing the chunk and job reservations, and then only releases', async () => {
      const account = await newAccount(store, 10);
      const webhook = await subscribe(store, account.id);
      const job = await processingJob(store, account.id, 'job_1', [5, 5]);
      await store.billing.reserve(account.id, job.id, 0, 3);
      await store.billing.reserve(account.id, job.id, 1, 4);
      await store.jobs.pauseForProvider(job.id, 0, 'the lookup provider is unavailable', NOW + 5);
      expect(await store.jobs.require(job.id)).toMatchObject({ status: 'paused', reason: 'provider_unavailable', errorMessage: 'the lookup provider is unavailable', updatedAt: NOW + 5 });
      expect(await store.billing.available(account.id)).toBe(10);
      await store.billing.reserve(account.id, job.id, 1, 4);
      await store.jobs.pauseForProvider(job.id, 1, 'again', NOW + 6);
      expect(await store.billing.available(account.id)).toBe(10);
      expect(await store.jobs.require(job.id)).toMatchObject({ status: 'paused', errorMessage: 'the lookup provider is unavailable', updatedAt: NOW + 5 });
      expect(await endEvents(store, webhook)).toEqual([]);
    });
  });

  describe('retrying failed rows', () => {
    it("puts a completed job's failed rows back to work, one pass more per chunk with failures, and runs it to assembly again", async () => {
      const account = await newAccount(store);
      const job = await processingJob(store, account.id, 'job_1', [3, 2, 2]);
      await finishChunk(account.id, job.id, 0, await claimChunk(store, job.id, 0), [ROW_FLAGS.error, 0, ROW_FLAGS.error]);
      await finishChunk(account.id, job.id, 1, await claimChunk(store, job.id, 1), [0, 0]);
      await finishChunk(account.id, job.id, 2, await claimChunk(store, job.id, 2), [0, ROW_FLAGS.error]);
      const assembly = (await store.jobs.acquireJobPhase('worker', NOW, LEASE_MS))!.lease;
      await store.jobs.complete(job.id, assembly, KEYS, NOW + 1);

      expect(await store.jobs.retryFailed(job.id, NOW + 2)).toBe(3);
      expect(await store.jobs.require(job.id)).toMatchObject({ status: 'running', phase: 'process', reason: null, errorMessage: null, finishedAt: null, updatedAt: NOW + 2 });
      const chunks = await store.jobs.chunks(job.id);
      expect(chunks.map((c) => [c.status, c.pass, c.passRows, c.cursor])).toEqual([['pending', 1, 2, 0], ['done', 0, 2, 2], ['pending', 1, 1, 0]]);
      // The retry pass reads the flags of the pass before.
      expect(chunks[0]!.rowFlags).toEqual(Buffer.from([ROW_FLAGS.error, 0, ROW_FLAGS.error]));

      const redo0 = await claimChunk(store, job.id, 0, 'worker', NOW + 3);
      await finishChunk(account.id, job.id, 0, redo0, [0, 0], 1);
      expect(await store.jobs.require(job.id)).toMatchObject({ phase: 'process' });
      const redo2 = await claimChunk(store, job.id, 2, 'worker', NOW + 3);
      await finishChunk(account.id, job.id, 2, redo2, [0], 1);
      expect(await store.jobs.require(job.id)).toMatchObject({ status: 'running', phase: 'assemble' });
    });

    it('retries the failed rows of a chunk still in work once its first run is done', async () => {
      const account = await newAccount(store);
      const job = await processingJob(store, account.id, 'job_1', [2, 2], NOW, { maxErrorRate: 0 });
      const first = await claimChunk(store, job.id, 0, 'worker-a');
      const second = await claimChunk(store, job.id, 1, 'worker-b');
      const oneError = { processed: 2, found: 0, invalid: 0, duplicate: 0, error: 1, credits: 0 };
      const failing = batch({ jobId: job.id, accountId: account.id, chunkIndex: 0, lease: first, cursor: 0, rows: 2 }, { output: output([['a\r\n', 0], ['b\r\n', ROW_FLAGS.error]]), counters: oneError, errorBudget: { maxErrorRate: 0, message: 'no failures allowed' } });
      expect(await store.jobs.commitBatch(failing)).toMatchObject({ failed: true });
      await store.jobs.completeChunk(job.id, 0, first, Buffer.from([0, ROW_FLAGS.error]), NOW);

      expect(await store.jobs.retryFailed(job.id, NOW + 1)).toBe(1);
      expect(await store.jobs.status(job.id)).toBe('running');
      await store.jobs.commitBatch(batch({ jobId: job.id, accountId: account.id, chunkIndex: 1, lease: second, cursor: 0, rows: 2 }, { output: output([['c\r\n', ROW_FLAGS.error], ['d\r\n', 0]]), counters: oneError }));
      await store.jobs.completeChunk(job.id, 1, second, Buffer.from([ROW_FLAGS.error, 0]), NOW + 2);
      expect((await store.jobs.chunks(job.id)).map((c) => [c.status, c.pass, c.passRows])).toEqual([['pending', 1, 1], ['pending', 1, 1]]);
      expect(await store.jobs.require(job.id)).toMatchObject({ status: 'running', phase: 'process' });
    });

    it('retries nothing for a job that is not finished (invalid_state) or has no failed rows (nothing_to_retry)', async () => {
      const account = await newAccount(store);
      const job = await processingJob(store, account.id, 'job_1', [1]);
      await expect(() => store.jobs.retryFailed(job.id, NOW)).rejects.toMatchObject({ code: 'invalid_state', statusCode: 409 });
      await finishChunk(account.id, job.id, 0, await claimChunk(store, job.id, 0), [0]);
      await store.jobs.complete(job.id, (await store.jobs.acquireJobPhase('worker', NOW, LEASE_MS))!.lease, KEYS, NOW);
      await expect(() => store.jobs.retryFailed(job.id, NOW)).rejects.toMatchObject({ code: 'nothing_to_retry', statusCode: 409 });
      await expect(() => store.jobs.retryFailed('job_missing', NOW)).rejects.toMatchObject({ code: 'job_not_found' });
      expect(await store.jobs.require(job.id)).toMatchObject({ status: 'completed' });
    });
  });

  describe('transitions', () => {
    /** A job of its own in `status`, reached through allowed moves. */
    async function jobIn(accountId: string, id: string, status: JobStatus) {
      await newJob(store, accountId, id);
      if (status === 'queued') return;
      await store.jobs.transition(id, 'running', { now: NOW });
      if (status !== 'running') await store.jobs.transition(id, status, { reason: status === 'paused' ? 'paused_by_operator' : null, now: NOW });
    }

    it('allows exactly the moves of the state rules: terminal states never change but failed -> running', async () => {
      const account = await newAccount(store);
      const expected = (from: JobStatus, to: JobStatus): boolean => {
        if (TERMINAL_STATUSES.has(from)) return from === 'failed' && to === 'running';
        if (to === 'running') return from === 'paused' || from === 'queued';
        if (to === 'paused') return from === 'running' || from === 'queued';
        return true;
      };
      const seen: string[] = [];
      const want: string[] = [];
      for (const from of STATUSES) {
        for (const to of STATUSES) {
          const id = `job_${from}_${to}`;
          await jobIn(account.id, id, from);
          expect(await store.jobs.status(id)).toBe(from);
          const moved = await store.jobs.transition(id, to, { now: NOW + 1 }).then(
            (job) => job.status === to,
            (e: { code?: string; statusCode?: number }) => (e.code === 'invalid_state' && e.statusCode === 409 ? false : Promise.reject(e)),
          );
          seen.push(`${from}->${to}: ${moved}`);
          want.push(`${from}->${to}: ${expected(from, to)}`);
          expect(await store.jobs.status(id)).toBe(moved ? to : from);
        }
      }
      expect(seen).toEqual(want);
    });

    it('releases the reservations and the lease of a job that leaves running, and queues an end event only for a terminal state', async () => {
      const account = await newAccount(store, 10);
      const webhook = await subscribe(store, account.id);
      for (const [id, to] of [['job_p', 'paused'], ['job_c', 'cancelled'], ['job_f', 'failed'], ['job_d', 'completed']] as const) {
        await newJob(store, account.id, id);
        const claim = await store.jobs.acquireJobPhase(`owner-${id}`, NOW, LEASE_MS);
        expect(claim?.job.id).toBe(id);
        await store.billing.reserve(account.id, id, 0, 2);
        expect(await store.billing.available(account.id)).toBe(8);
        const after = await store.jobs.transition(id, to, { reason: 'why', message: 'because', now: NOW + 2 });
        expect(after).toMatchObject({ status: to, reason: 'why', errorMessage: 'because', updatedAt: NOW + 2, finishedAt: to === 'paused' ? null : NOW + 2 });
        expect(await store.jobs.require(id)).toEqual(after);
        expect(await store.billing.available(account.id)).toBe(10);
        expect(await store.jobs.liveLeaseOwners(NOW + 2)).toEqual([]);
      }
      // All three ended at one time, so in no particular order here (the relay's own tests cover order).
      const byJob = (x: { job: string }, y: { job: string }) => (x.job < y.job ? -1 : 1);
      expect((await endEvents(store, webhook, NOW + 2)).sort(byJob)).toEqual([
        { job: 'job_c', status: 'cancelled' },
        { job: 'job_d', status: 'completed' },
        { job: 'job_f', status: 'failed' },
      ]);
      expect((await store.jobs.transition('job_f', 'running', { now: NOW + 3 })).finishedAt).toBeNull();
      expect(await store.jobs.transition('job_p', 'running', { now: NOW + 3 })).toMatchObject({ status: 'running', reason: null, errorMessage: null });
      expect(await endEvents(store, webhook)).toHaveLength(3);
    });

    it('moves a job only from the status named, and otherwise changes nothing', async () => {
      const account = await newAccount(store);
      await newJob(store, account.id, 'job_1');
      expect(await store.jobs.transitionFrom('running', 'job_1', 'paused', { now: NOW + 1 })).toBeUndefined();
      expect(await store.jobs.require('job_1')).toMatchObject({ status: 'queued', updatedAt: NOW });
      expect(await store.jobs.transitionFrom('queued', 'job_1', 'cancelled', { reason: 'by operator', now: NOW + 2 })).toMatchObject({ status: 'cancelled', reason: 'by operator' });
      await expect(() => store.jobs.transitionFrom('cancelled', 'job_1', 'paused', { now: NOW + 3 })).rejects.toMatchObject({ code: 'invalid_state' });
    });

    it('resumes a paused or failed job with its failures forgotten, and nothing else', async () => {
      const account = await newAccount(store);
      const job = await processingJob(store, account.id, 'job_1', [5]);
      const lease = await claimChunk(store, job.id, 0);
      expect(await store.jobs.recordFailure({ jobId: job.id, chunkIndex: 0 }, lease, NOW + 1)).toBe(1);
      expect(await store.jobs.recordFailure({ jobId: job.id, chunkIndex: 0 }, lease, NOW + 1)).toBe(2);
      await store.jobs.transition(job.id, 'paused', { reason: 'provider_unavailable', message: 'down', now: NOW + 2 });
      expect(await store.jobs.resume(job.id, NOW + 3)).toMatchObject({ status: 'running', reason: null, errorMessage: null, updatedAt: NOW + 3 });
      expect(await store.jobs.recordFailure({ jobId: job.id, chunkIndex: 0 }, lease, NOW + 4)).toBe(1);

      await store.jobs.transition(job.id, 'failed', { reason: 'error_budget_exceeded', now: NOW + 5 });
      expect(await store.jobs.resume(job.id, NOW + 6)).toMatchObject({ status: 'running', finishedAt: null });
      for (const status of ['queued', 'running', 'completed', 'cancelled'] as const) {
        await jobIn(account.id, `job_${status}`, status);
        await expect(() => store.jobs.resume(`job_${status}`, NOW)).rejects.toMatchObject({ code: 'invalid_state', statusCode: 409 });
        expect(await store.jobs.status(`job_${status}`)).toBe(status);
      }
      await expect(() => store.jobs.resume('job_missing', NOW)).rejects.toMatchObject({ code: 'job_not_found' });
    });

    it('finds the jobs paused for a reason since a time', async () => {
      const account = await newAccount(store);
      for (const [id, reason, at] of [['job_1', 'provider_unavailable', NOW + 1], ['job_2', 'provider_unavailable', NOW + 2], ['job_3', 'paused_by_operator', NOW + 1]] as const) {
        await newJob(store, account.id, id);
        await store.jobs.transition(id, 'paused', { reason, now: at });
      }
      expect(await store.jobs.pausedSince('provider_unavailable', NOW)).toEqual([]);
      expect(await store.jobs.pausedSince('provider_unavailable', NOW + 1)).toEqual(['job_1']);
      expect((await store.jobs.pausedSince('provider_unavailable', NOW + 2)).sort()).toEqual(['job_1', 'job_2']);
      await store.jobs.resume('job_1', NOW + 3);
      expect(await store.jobs.pausedSince('provider_unavailable', NOW + 3)).toEqual(['job_2']);
    });
  });
});
