import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { claimChunk, LEASE_MS, newAccount, newJob, NOW, openTestStore, processingJob, type TestStore } from '../support/test-store.js';

/**
 * A claim names the owner whose lease it took over: the worker logs each takeover from it. The
 * owner must be the one the claim replaced, read with the claim itself; a claim of work that was
 * released (or freed) takes over nothing.
 */
describe.each(TEST_STORES)('Store contract on %s: lease takeovers', (kind) => {
  let opened: TestStore;
  let store: Store;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
  });
  afterEach(() => opened.close());

  const EXPIRED = NOW + LEASE_MS + 1;

  it("names the previous owner of a chunk whose lease ran out, and none for a chunk never leased, released or freed", async () => {
    const account = await newAccount(store);
    await processingJob(store, account.id, 'job_1', [5, 5]);
    const first = await store.jobs.acquireChunk('worker-a', NOW, LEASE_MS);
    expect(first).toMatchObject({ chunk: { jobId: 'job_1', chunkIndex: 0 } });
    expect(first?.previousOwner).toBeUndefined();

    const taken = await store.jobs.acquireChunk('worker-b', EXPIRED, LEASE_MS);
    expect(taken).toMatchObject({ chunk: { jobId: 'job_1', chunkIndex: 0 }, lease: { owner: 'worker-b', epoch: 2 }, previousOwner: 'worker-a' });
    // The claim's record is the chunk's, nothing more.
    expect(taken!.chunk).toEqual(await store.jobs.chunk('job_1', 0));

    await store.jobs.releaseChunkLease('job_1', 0, taken!.lease);
    const afterRelease = await store.jobs.acquireChunk('worker-c', EXPIRED, LEASE_MS);
    expect(afterRelease).toMatchObject({ chunk: { chunkIndex: 0 }, lease: { owner: 'worker-c', epoch: 3 } });
    expect(afterRelease?.previousOwner).toBeUndefined();

    await claimChunk(store, 'job_1', 1, 'worker-dead', EXPIRED);
    expect(await store.jobs.freeLeasesOf('worker-dead')).toBe(1);
    const afterFree = await store.jobs.acquireChunk('worker-d', EXPIRED, LEASE_MS);
    expect(afterFree).toMatchObject({ chunk: { chunkIndex: 1 } });
    expect(afterFree?.previousOwner).toBeUndefined();
  });

  it('names the previous owner of a job phase whose lease ran out, and none for a queued job or a released phase', async () => {
    const account = await newAccount(store);
    await newJob(store, account.id, 'job_1');
    const first = await store.jobs.acquireJobPhase('worker-a', NOW, LEASE_MS);
    expect(first).toMatchObject({ job: { id: 'job_1', phase: 'split' } });
    expect(first?.previousOwner).toBeUndefined();

    const taken = await store.jobs.acquireJobPhase('worker-b', EXPIRED, LEASE_MS);
    expect(taken).toMatchObject({ job: { id: 'job_1', phase: 'split' }, lease: { owner: 'worker-b', epoch: 2 }, previousOwner: 'worker-a' });
    // The job is as `get` reads it: the previous owner is not folded into the record.
    expect(taken!.job).toEqual(await store.jobs.get('job_1'));

    await store.jobs.releaseJobLease('job_1', taken!.lease);
    const afterRelease = await store.jobs.acquireJobPhase('worker-c', EXPIRED, LEASE_MS);
    expect(afterRelease).toMatchObject({ job: { id: 'job_1' }, lease: { owner: 'worker-c', epoch: 3 } });
    expect(afterRelease?.previousOwner).toBeUndefined();
  });

  it('reports a retry after a failure backoff as a takeover from the failed owner, since its lease was kept to the retry time', async () => {
    const account = await newAccount(store);
    await processingJob(store, account.id, 'job_1', [5]);
    const lease = await claimChunk(store, 'job_1', 0, 'worker-a');
    expect(await store.jobs.recordFailure({ jobId: 'job_1', chunkIndex: 0 }, lease, NOW + 5_000)).toBe(1);
    expect(await store.jobs.acquireChunk('worker-a', NOW + 5_001, LEASE_MS)).toMatchObject({ lease: { owner: 'worker-a', epoch: 2 }, previousOwner: 'worker-a' });
  });

  it('two processes racing to take over one run-out lease: one claim, naming the old owner', async () => {
    const account = await newAccount(store);
    const [a, b] = await Promise.all([opened.openPeer(), opened.openPeer()]);
    for (let round = 0; round < 10; round++) {
      await processingJob(store, account.id, `job_${round}`, [5]);
      await claimChunk(store, `job_${round}`, 0, 'worker-old');
      const claims = await Promise.all([a.jobs.acquireChunk('worker-a', EXPIRED, LEASE_MS), b.jobs.acquireChunk('worker-b', EXPIRED, LEASE_MS)]);
      const won = claims.filter((c) => c !== undefined);
      expect(won).toHaveLength(1);
      expect(won[0]).toMatchObject({ chunk: { jobId: `job_${round}`, chunkIndex: 0 }, lease: { epoch: 2 }, previousOwner: 'worker-old' });
      await store.jobs.transition(`job_${round}`, 'cancelled', { now: NOW });
    }
  });
});
