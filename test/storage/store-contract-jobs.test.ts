import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { batch, claimChunk, LEASE_MS, newAccount, newJob, NOW, openTestStore, processingJob, type TestStore } from '../support/test-store.js';

describe.each(TEST_STORES)('Store contract on %s: jobs and leases', (kind) => {
  let opened: TestStore;
  let store: Store;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
  });
  afterEach(() => opened.close());

  describe('jobs', () => {
    it('creates a queued job in its split phase, and reads it back as created', async () => {
      const account = await newAccount(store);
      const created = await store.jobs.create({
        id: 'job_1',
        accountId: account.id,
        type: 'gender,company',
        inputKey: 'inputs/job_1.csv',
        inputName: 'people.csv',
        options: { column: 'Email', lookups: [{ type: 'gender' }, { type: 'company', column: 'Firm' }], downloadLink: true, maxErrorRate: 0.25 },
        now: NOW,
      });
      expect(created).toEqual({
        id: 'job_1',
        accountId: account.id,
        type: 'gender,company',
        status: 'queued',
        phase: 'split',
        reason: null,
        errorMessage: null,
        inputKey: 'inputs/job_1.csv',
        inputName: 'people.csv',
        options: { column: 'Email', lookups: [{ type: 'gender' }, { type: 'company', column: 'Firm' }], downloadLink: true, maxErrorRate: 0.25 },
        header: null,
        keyColumn: null,
        totalRows: null,
        chunkCount: null,
        processedRows: 0,
        foundRows: 0,
        invalidRows: 0,
        duplicateRows: 0,
        errorRows: 0,
        creditsUsed: 0,
        leaseEpoch: 0,
        attempts: 0,
        resultAllKey: null,
        resultFoundKey: null,
        resultErrorsKey: null,
        createdAt: NOW,
        startedAt: null,
        updatedAt: NOW,
        finishedAt: null,
        countries: null,
      });
      expect(await store.jobs.get('job_1')).toEqual(created);
      expect(await store.jobs.require('job_1')).toEqual(created);
      expect(await store.jobs.status('job_1')).toBe('queued');
    });

    it('knows no job it was never given: undefined, or job_not_found (404) when required', async () => {
      expect(await store.jobs.get('job_missing')).toBeUndefined();
      expect(await store.jobs.status('job_missing')).toBeUndefined();
      await expect(() => store.jobs.require('job_missing')).rejects.toMatchObject({ code: 'job_not_found', statusCode: 404 });
      expect(await store.jobs.chunks('job_missing')).toEqual([]);
      expect(await store.jobs.chunk('job_missing', 0)).toBeUndefined();
    });

    it('lists jobs newest first (ties by id, descending), filtered by account and status, a page at a time with the total', async () => {
      const a = await newAccount(store);
      const b = await newAccount(store);
      await newJob(store, a.id, 'job_a1', NOW + 1);
      await newJob(store, a.id, 'job_a2', NOW + 2);
      await newJob(store, b.id, 'job_b1', NOW + 2);
      await newJob(store, a.id, 'job_a3', NOW + 3);
      await newJob(store, b.id, 'job_b2', NOW + 4);
      await store.jobs.transition('job_a2', 'cancelled', { now: NOW + 5 });

      const ids = (page: { jobs: { id: string }[] }) => page.jobs.map((j) => j.id);
      const all = await store.jobs.list({ limit: 10, offset: 0 });
      expect(ids(all)).toEqual(['job_b2', 'job_a3', 'job_b1', 'job_a2', 'job_a1']);
      expect(all.total).toBe(5);
      const page = await store.jobs.list({ limit: 2, offset: 2 });
      expect([ids(page), page.total]).toEqual([['job_b1', 'job_a2'], 5]);
      const ofA = await store.jobs.list({ accountId: a.id, limit: 2, offset: 0 });
      expect([ids(ofA), ofA.total]).toEqual([['job_a3', 'job_a2'], 3]);
      const queuedOfA = await store.jobs.list({ accountId: a.id, status: 'queued', limit: 10, offset: 0 });
      expect([ids(queuedOfA), queuedOfA.total]).toEqual([['job_a3', 'job_a1'], 2]);
      const cancelled = await store.jobs.list({ status: 'cancelled', limit: 10, offset: 0 });
      expect([ids(cancelled), cancelled.total]).toEqual([['job_a2'], 1]);
      const beyond = await store.jobs.list({ limit: 10, offset: 10 });
      expect([ids(beyond), beyond.total]).toEqual([[], 5]);
    });
  });

  describe('the split phase', () => {
    it('leases the oldest queued job (ties by id), marks it running, and counts the attempt', async () => {
      const account = await newAccount(store);
      await newJob(store, account.id, 'job_b', NOW + 1);
      await newJob(store, account.id, 'job_c', NOW + 1);
      await newJob(store, account.id, 'job_a', NOW + 2);
      const claim = await store.jobs.acquireJobPhase('worker-a', NOW + 10, LEASE_MS);
      expect(claim?.lease).toEqual({ owner: 'worker-a', epoch: 1 });
      expect(claim?.job).toMatchObject({ id: 'job_b', status: 'running', phase: 'split', leaseEpoch: 1, attempts: 1, startedAt: NOW + 10, updatedAt: NOW + 10 });
      expect(await store.jobs.require('job_b')).toEqual(claim?.job);
      expect((await store.jobs.acquireJobPhase('worker-b', NOW + 10, LEASE_MS))?.job.id).toBe('job_c');
      expect((await store.jobs.acquireJobPhase('worker-b', NOW + 10, LEASE_MS))?.job.id).toBe('job_a');
      expect(await store.jobs.acquireJobPhase('worker-b', NOW + 10, LEASE_MS)).toBeUndefined();
    });

    it('takes a lease over only once it has run out, with the next epoch, keeping the first start time', async () => {
      const account = await newAccount(store);
      await newJob(store, account.id, 'job_1');
      const first = await store.jobs.acquireJobPhase('worker-a', NOW, LEASE_MS);
      expect(await store.jobs.acquireJobPhase('worker-b', NOW + LEASE_MS, LEASE_MS)).toBeUndefined();
      const second = await store.jobs.acquireJobPhase('worker-b', NOW + LEASE_MS + 1, LEASE_MS);
      expect(second?.lease).toEqual({ owner: 'worker-b', epoch: first!.lease.epoch + 1 });
      expect(second?.job).toMatchObject({ id: 'job_1', attempts: 2, startedAt: NOW, updatedAt: NOW + LEASE_MS + 1 });
    });

    it('starts no more than maxRunningPerAccount jobs of one account, and lets other accounts through', async () => {
      const a = await newAccount(store);
      const b = await newAccount(store);
      await newJob(store, a.id, 'job_a1', NOW + 1);
      await newJob(store, a.id, 'job_a2', NOW + 2);
      await newJob(store, b.id, 'job_b1', NOW + 3);
      const take = async () => (await store.jobs.acquireJobPhase('worker', NOW + 10, LEASE_MS, 1))?.job.id;
      expect(await take()).toBe('job_a1');
      expect(await take()).toBe('job_b1');
      expect(await take()).toBeUndefined();
      // Without a cap the second job of a runs beside its first.
      expect((await store.jobs.acquireJobPhase('worker', NOW + 10, LEASE_MS))?.job.id).toBe('job_a2');
    });

    it('counts a running job against the cap until it leaves running, and never caps its assembly', async () => {
      const a = await newAccount(store);
      await processingJob(store, a.id, 'job_a1', [1], NOW + 1);
      await newJob(store, a.id, 'job_a2', NOW + 2);
      expect(await store.jobs.acquireJobPhase('worker', NOW + 10, LEASE_MS, 1)).toBeUndefined();

      const lease = await claimChunk(store, 'job_a1', 0, 'worker', NOW + 10);
      await store.jobs.commitBatch(batch({ jobId: 'job_a1', accountId: a.id, chunkIndex: 0, lease, cursor: 0, rows: 1 }));
      await store.jobs.completeChunk('job_a1', 0, lease, null, NOW + 10);
      const assembly = await store.jobs.acquireJobPhase('worker', NOW + 10, LEASE_MS, 1);
      expect(assembly?.job).toMatchObject({ id: 'job_a1', phase: 'assemble' });
      await store.jobs.complete('job_a1', assembly!.lease, { allKey: 'a', foundKey: 'f', errorsKey: 'e' }, NOW + 11);
      expect((await store.jobs.acquireJobPhase('worker', NOW + 12, LEASE_MS, 1))?.job.id).toBe('job_a2');
    });

    it('finishes a split fenced by its lease: chunks in order, the job in its process phase, the lease free', async () => {
      const account = await newAccount(store);
      await newJob(store, account.id, 'job_1');
      const claim = await store.jobs.acquireJobPhase('worker-a', NOW, LEASE_MS);
      await store.jobs.finishSplit('job_1', claim!.lease, { header: ['email', 'name'], keyColumn: 0, totalRows: 25, chunks: [{ firstRow: 0, rowCount: 10 }, { firstRow: 10, rowCount: 10 }, { firstRow: 20, rowCount: 5 }] }, NOW + 5);
      expect(await store.jobs.require('job_1')).toMatchObject({ status: 'running', phase: 'process', header: ['email', 'name'], keyColumn: 0, totalRows: 25, chunkCount: 3, updatedAt: NOW + 5 });
      const chunks = await store.jobs.chunks('job_1');
      expect(chunks).toEqual([0, 10, 20].map((firstRow, chunkIndex) => ({
        jobId: 'job_1',
        chunkIndex,
        firstRow,
        rowCount: chunkIndex === 2 ? 5 : 10,
        cursor: 0,
        status: 'pending',
        leaseEpoch: 0,
        attempts: 0,
        pass: 0,
        passRows: chunkIndex === 2 ? 5 : 10,
        rowFlags: null,
      })));
      expect(await store.jobs.chunk('job_1', 2)).toEqual(chunks[2]);
      expect(await store.jobs.liveLeaseOwners(NOW + 5)).toEqual([]);
      // The split phase is over: the job is not leased again until its chunks are done.
      expect(await store.jobs.acquireJobPhase('worker-b', NOW + LEASE_MS * 2, LEASE_MS)).toBeUndefined();
    });

    it("keeps the split's per-country phone counts with the job, and none when the split read none", async () => {
      const account = await newAccount(store);
      await newJob(store, account.id, 'job_1');
      await newJob(store, account.id, 'job_2');
      const countries = { byCountry: { US: 1573, DE: 12, '001': 1 }, overrides: 2 };
      const first = await store.jobs.acquireJobPhase('worker-a', NOW, LEASE_MS);
      await store.jobs.finishSplit(first!.job.id, first!.lease, { header: ['phone'], keyColumn: 0, totalRows: 1586, chunks: [{ firstRow: 0, rowCount: 1586 }], countries }, NOW);
      const second = await store.jobs.acquireJobPhase('worker-a', NOW, LEASE_MS);
      await store.jobs.finishSplit(second!.job.id, second!.lease, { header: ['email'], keyColumn: 0, totalRows: 1, chunks: [{ firstRow: 0, rowCount: 1 }] }, NOW);
      expect((await store.jobs.require(first!.job.id)).countries).toEqual(countries);
      expect((await store.jobs.require(second!.job.id)).countries).toBeNull();
      expect((await store.jobs.list({ limit: 10, offset: 0 })).jobs.find((j) => j.id === first!.job.id)?.countries).toEqual(countries);
    });

    it('moves a split with no chunks straight to assembly', async () => {
      const account = await newAccount(store);
      await newJob(store, account.id, 'job_1');
      const claim = await store.jobs.acquireJobPhase('worker-a', NOW, LEASE_MS);
      await store.jobs.finishSplit('job_1', claim!.lease, { header: ['email'], keyColumn: 0, totalRows: 0, chunks: [] }, NOW);
      expect(await store.jobs.acquireJobPhase('worker-b', NOW, LEASE_MS)).toMatchObject({ job: { id: 'job_1', phase: 'assemble' } });
    });

    it('refuses a split finished under a lost lease (lease_lost) and writes none of it', async () => {
      const account = await newAccount(store);
      await newJob(store, account.id, 'job_1');
      const stale = await store.jobs.acquireJobPhase('worker-a', NOW, LEASE_MS);
      const current = await store.jobs.acquireJobPhase('worker-b', NOW + LEASE_MS + 1, LEASE_MS);
      const split = { header: ['email'], keyColumn: 0, totalRows: 10, chunks: [{ firstRow: 0, rowCount: 10 }] };
      await expect(() => store.jobs.finishSplit('job_1', stale!.lease, split, NOW + LEASE_MS + 2)).rejects.toMatchObject({ code: 'lease_lost' });
      expect(await store.jobs.chunks('job_1')).toEqual([]);
      expect(await store.jobs.require('job_1')).toMatchObject({ phase: 'split', totalRows: null, chunkCount: null });
      await store.jobs.finishSplit('job_1', current!.lease, split, NOW + LEASE_MS + 2);
      expect(await store.jobs.chunks('job_1')).toHaveLength(1);
    });

    it('renews and releases a job lease only for its holder: owner and epoch', async () => {
      const account = await newAccount(store);
      await newJob(store, account.id, 'job_1');
      const first = (await store.jobs.acquireJobPhase('worker-a', NOW, LEASE_MS))!.lease;
      expect(await store.jobs.renewJobLease('job_1', { ...first, owner: 'worker-b' }, NOW + 10 * LEASE_MS)).toBe(false);
      expect(await store.jobs.renewJobLease('job_1', { ...first, epoch: first.epoch - 1 }, NOW + 10 * LEASE_MS)).toBe(false);
      // Neither refused renewal moved the expiry.
      const lease = (await store.jobs.acquireJobPhase('worker-b', NOW + LEASE_MS + 1, LEASE_MS))!.lease;
      expect(lease).toEqual({ owner: 'worker-b', epoch: 2 });

      expect(await store.jobs.renewJobLease('job_1', lease, NOW + 5 * LEASE_MS)).toBe(true);
      expect(await store.jobs.acquireJobPhase('worker-c', NOW + 4 * LEASE_MS, LEASE_MS)).toBeUndefined();
      await store.jobs.releaseJobLease('job_1', first);
      expect(await store.jobs.acquireJobPhase('worker-c', NOW + 4 * LEASE_MS, LEASE_MS)).toBeUndefined();
      await store.jobs.releaseJobLease('job_1', lease);
      expect(await store.jobs.acquireJobPhase('worker-c', NOW + 4 * LEASE_MS, LEASE_MS)).toMatchObject({ job: { id: 'job_1' }, lease: { owner: 'worker-c', epoch: 3 } });
    });
  });

  describe('chunks', () => {
    it('leases pending chunks of running jobs, fewest chunks in work per account first, then older jobs, then chunk order', async () => {
      const a = await newAccount(store);
      const b = await newAccount(store);
      await processingJob(store, a.id, 'job_a', [5, 5, 5], NOW + 1);
      await processingJob(store, b.id, 'job_b', [5, 5], NOW + 2);
      const claims: string[] = [];
      for (;;) {
        const claim = await store.jobs.acquireChunk('worker', NOW + 10, LEASE_MS);
        if (!claim) break;
        expect(claim.lease).toEqual({ owner: 'worker', epoch: 1 });
        expect(claim.chunk).toMatchObject({ leaseEpoch: 1, attempts: 1, status: 'pending' });
        claims.push(`${claim.chunk.jobId}/${claim.chunk.chunkIndex}`);
      }
      expect(claims).toEqual(['job_a/0', 'job_b/0', 'job_a/1', 'job_b/1', 'job_a/2']);
    });

    it('leases no chunk of a job that is not running, and a chunk again only after its lease ran out', async () => {
      const account = await newAccount(store);
      await processingJob(store, account.id, 'job_1', [5]);
      await processingJob(store, account.id, 'job_2', [5], NOW + 1);
      await store.jobs.transition('job_2', 'paused', { reason: 'paused_by_operator', now: NOW + 2 });
      const first = await store.jobs.acquireChunk('worker-a', NOW + 10, LEASE_MS);
      expect(first?.chunk).toMatchObject({ jobId: 'job_1', chunkIndex: 0 });
      expect(await store.jobs.acquireChunk('worker-b', NOW + 10 + LEASE_MS, LEASE_MS)).toBeUndefined();
      const again = await store.jobs.acquireChunk('worker-b', NOW + 11 + LEASE_MS, LEASE_MS);
      expect(again?.chunk).toMatchObject({ jobId: 'job_1', chunkIndex: 0, leaseEpoch: 2, attempts: 2 });
      expect(again?.lease).toEqual({ owner: 'worker-b', epoch: 2 });
    });

    it('renews and releases a chunk lease only for its holder: owner and epoch', async () => {
      const account = await newAccount(store);
      await processingJob(store, account.id, 'job_1', [5]);
      const lease = await claimChunk(store, 'job_1', 0, 'worker-a');
      expect(await store.jobs.renewChunkLease('job_1', 0, { ...lease, owner: 'worker-b' }, NOW + 10 * LEASE_MS)).toBe(false);
      expect(await store.jobs.renewChunkLease('job_1', 0, { ...lease, epoch: 0 }, NOW + 10 * LEASE_MS)).toBe(false);
      expect(await store.jobs.renewChunkLease('job_1', 0, lease, NOW + 10 * LEASE_MS)).toBe(true);
      expect(await store.jobs.acquireChunk('worker-b', NOW + 9 * LEASE_MS, LEASE_MS)).toBeUndefined();
      await store.jobs.releaseChunkLease('job_1', 0, { ...lease, epoch: 0 });
      expect(await store.jobs.acquireChunk('worker-b', NOW + 9 * LEASE_MS, LEASE_MS)).toBeUndefined();
      await store.jobs.releaseChunkLease('job_1', 0, lease);
      expect(await store.jobs.acquireChunk('worker-b', NOW + 1, LEASE_MS)).toMatchObject({ chunk: { chunkIndex: 0 }, lease: { owner: 'worker-b', epoch: 2 } });
    });

    it('tells an account that another has free work waiting while none of it is in work', async () => {
      const a = await newAccount(store);
      const b = await newAccount(store);
      await processingJob(store, a.id, 'job_a', [5, 5], NOW + 1);
      await claimChunk(store, 'job_a', 0, 'worker', NOW + 10);
      expect(await store.jobs.otherAccountStarved(a.id, NOW + 10)).toBe(false);
      await processingJob(store, b.id, 'job_b', [5], NOW + 2);
      expect(await store.jobs.otherAccountStarved(a.id, NOW + 10)).toBe(true);
      // a's free chunk does not count for b: a has work in hand.
      expect(await store.jobs.otherAccountStarved(b.id, NOW + 10)).toBe(false);
      await claimChunk(store, 'job_b', 0, 'worker', NOW + 10);
      expect(await store.jobs.otherAccountStarved(a.id, NOW + 10)).toBe(false);
      // A queued job of b is free work when the running-jobs cap lets it start, and not otherwise.
      await newJob(store, b.id, 'job_b2', NOW + 3);
      expect(await store.jobs.otherAccountStarved(a.id, NOW + 10)).toBe(true);
      expect(await store.jobs.otherAccountStarved(a.id, NOW + 10, 1)).toBe(false);
    });
  });

  describe('failures and dead workers', () => {
    it('counts failures in a row under the lease, keeps the lease until the retry time, and counts 0 for a lost lease', async () => {
      const account = await newAccount(store);
      await processingJob(store, account.id, 'job_1', [5]);
      const lease = await claimChunk(store, 'job_1', 0, 'worker-a');
      expect(await store.jobs.recordFailure({ jobId: 'job_1', chunkIndex: 0 }, lease, NOW + 5_000)).toBe(1);
      expect(await store.jobs.recordFailure({ jobId: 'job_1', chunkIndex: 0 }, lease, NOW + 5_000)).toBe(2);
      expect(await store.jobs.acquireChunk('worker-b', NOW + 5_000, LEASE_MS)).toBeUndefined();
      const taken = await store.jobs.acquireChunk('worker-b', NOW + 5_001, LEASE_MS);
      expect(taken?.lease.epoch).toBe(lease.epoch + 1);
      expect(await store.jobs.recordFailure({ jobId: 'job_1', chunkIndex: 0 }, lease, NOW + 9_000)).toBe(0);
      // Failures in a row, whoever holds the chunk: a takeover is not a success.
      expect(await store.jobs.recordFailure({ jobId: 'job_1', chunkIndex: 0 }, taken!.lease, NOW + 9_000)).toBe(3);
      // A committed batch is a success: the count starts again.
      await store.jobs.commitBatch(batch({ jobId: 'job_1', accountId: account.id, chunkIndex: 0, lease: taken!.lease, cursor: 0, rows: 2 }));
      expect(await store.jobs.recordFailure({ jobId: 'job_1', chunkIndex: 0 }, taken!.lease, NOW + 9_000)).toBe(1);
    });

    it('counts failures of a job phase the same way, until the phase is cleared', async () => {
      const account = await newAccount(store);
      await newJob(store, account.id, 'job_1');
      const { lease } = (await store.jobs.acquireJobPhase('worker-a', NOW, LEASE_MS))!;
      expect(await store.jobs.recordFailure({ jobId: 'job_1' }, lease, NOW + 5_000)).toBe(1);
      expect(await store.jobs.recordFailure({ jobId: 'job_1' }, lease, NOW + 5_000)).toBe(2);
      expect(await store.jobs.acquireJobPhase('worker-b', NOW + 5_000, LEASE_MS)).toBeUndefined();
      await store.jobs.clearPhaseFailures('job_1');
      expect(await store.jobs.recordFailure({ jobId: 'job_1' }, lease, NOW + 5_000)).toBe(1);
      const taken = await store.jobs.acquireJobPhase('worker-b', NOW + 5_001, LEASE_MS);
      expect(await store.jobs.recordFailure({ jobId: 'job_1' }, lease, NOW + 9_000)).toBe(0);
      expect(await store.jobs.recordFailure({ jobId: 'job_1' }, taken!.lease, NOW + 9_000)).toBe(2);
    });

    it("names the owners of live leases, and frees a dead owner's leases keeping their epochs, so its late commits stay fenced", async () => {
      const account = await newAccount(store);
      await processingJob(store, account.id, 'job_1', [5, 5]);
      await newJob(store, account.id, 'job_2', NOW + 1);
      const dead = await claimChunk(store, 'job_1', 0, 'worker-dead');
      await claimChunk(store, 'job_1', 1, 'worker-live');
      const phase = await store.jobs.acquireJobPhase('worker-dead', NOW, LEASE_MS);
      expect((await store.jobs.liveLeaseOwners(NOW)).sort()).toEqual(['worker-dead', 'worker-live']);
      expect((await store.jobs.liveLeaseOwners(NOW + LEASE_MS + 1)).sort()).toEqual([]);

      expect(await store.jobs.freeLeasesOf('worker-dead')).toBe(2);
      expect(await store.jobs.liveLeaseOwners(NOW)).toEqual(['worker-live']);
      const chunk = await store.jobs.acquireChunk('worker-b', NOW + 1, LEASE_MS);
      expect(chunk).toMatchObject({ chunk: { jobId: 'job_1', chunkIndex: 0 }, lease: { epoch: dead.epoch + 1 } });
      expect(await store.jobs.acquireJobPhase('worker-b', NOW + 1, LEASE_MS)).toMatchObject({ job: { id: 'job_2' }, lease: { epoch: phase!.lease.epoch + 1 } });
      await expect(() => store.jobs.commitBatch(batch({ jobId: 'job_1', accountId: account.id, chunkIndex: 0, lease: dead, cursor: 0, rows: 1 }))).rejects.toMatchObject({ code: 'lease_lost' });
      expect(await store.jobs.freeLeasesOf('worker-dead')).toBe(0);
    });
  });
});
