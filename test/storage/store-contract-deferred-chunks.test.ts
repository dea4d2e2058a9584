import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ROW_FLAGS } from '../../src/storage/job-records.js';
import type { Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { batch, claimChunk, LEASE_MS, newAccount, NOW, openTestStore, output, processingJob, type TestStore } from '../support/test-store.js';

describe.each(TEST_STORES)('Store contract on %s: deferred passes', (kind) => {
  let opened: TestStore;
  let store: Store;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
  });
  afterEach(() => opened.close());

  it('a chunk ended with retryAt starts a pass over its failed rows that no worker can claim before then, and the job waits for it', async () => {
    const account = await newAccount(store);
    const job = await processingJob(store, account.id, 'job_1', [3]);
    const lease = await claimChunk(store, job.id, 0, 'worker-a');
    const flags = [0, ROW_FLAGS.error, ROW_FLAGS.error];
    await store.jobs.commitBatch(
      batch(
        { jobId: job.id, accountId: account.id, chunkIndex: 0, lease, cursor: 0, rows: 3 },
        { output: output(flags.map((f, i) => [`0:${i}\r\n`, f])), counters: { processed: 3, found: 0, invalid: 0, duplicate: 0, error: 2, credits: 0 } },
      ),
    );
    const retryAt = NOW + 60_000;
    await store.jobs.completeChunk(job.id, 0, lease, Buffer.from(flags), NOW, retryAt);
    // The finishing worker lets its lease go, as Worker.leased does: the wait must survive that.
    await store.jobs.releaseChunkLease(job.id, 0, lease);
    expect(await store.jobs.chunk(job.id, 0)).toMatchObject({ status: 'pending', pass: 1, passRows: 2, cursor: 0 });
    expect(await store.jobs.require(job.id)).toMatchObject({ status: 'running', phase: 'process' });
    expect(await store.jobs.acquireChunk('worker-b', NOW + 1_000, LEASE_MS)).toBeUndefined();
    expect(await store.jobs.acquireChunk('worker-b', retryAt - 1, LEASE_MS)).toBeUndefined();
    const taken = await store.jobs.acquireChunk('worker-b', retryAt + 1, LEASE_MS);
    expect(taken).toMatchObject({ chunk: { jobId: job.id, chunkIndex: 0, pass: 1 } });
    expect(taken!.previousOwner).toBeUndefined();
  });
});
