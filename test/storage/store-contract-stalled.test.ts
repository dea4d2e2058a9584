import os from 'node:os';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { jobActivity } from '../../src/jobs/job-activity.js';
import type { Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { claimChunk, LEASE_MS, newAccount, newJob, NOW, openTestStore, processingJob, type TestStore } from '../support/test-store.js';

/** A pid no process has: above Linux's pid_max limit (2^22). */
const DEAD_PID = 4_194_400;

describe.each(TEST_STORES)('Store contract on %s: the leases read with a job, and stalled jobs', (kind) => {
  let opened: TestStore;
  let store: Store;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
  });
  afterEach(() => opened.close());

  it('reads a running job with its own lease and its pending chunks\' leases, one per owner, run out or not', async () => {
    const account = await newAccount(store);
    await processingJob(store, account.id, 'job_1', [5, 5, 5]);
    await claimChunk(store, 'job_1', 0, 'worker-a', NOW);
    await claimChunk(store, 'job_1', 1, 'worker-a', NOW + 1000);
    await claimChunk(store, 'job_1', 2, 'worker-b', NOW);
    const job = await store.jobs.require('job_1');
    const byOwner = [...job.work!].sort((a, b) => String(a.owner).localeCompare(String(b.owner)));
    expect(byOwner).toEqual([
      { owner: 'worker-a', expiresAt: NOW + 1000 + LEASE_MS },
      { owner: 'worker-b', expiresAt: NOW + LEASE_MS },
    ]);
    // The same facts in a listing, with no query per job; a queued job has none to read.
    await newJob(store, account.id, 'job_2', NOW + 5);
    const { jobs } = await store.jobs.list({ limit: 10, offset: 0 });
    expect(jobs.map((j) => [j.id, j.work?.length])).toEqual([
      ['job_2', undefined],
      ['job_1', 2],
    ]);
    expect(jobs.find((j) => j.id === 'job_1')!.work).toEqual(job.work);
  });

  it('a released lease leaves nothing; a job that is not running has no work to read', async () => {
    const account = await newAccount(store);
    await processingJob(store, account.id, 'job_1', [5]);
    const lease = await claimChunk(store, 'job_1', 0);
    await store.jobs.releaseChunkLease('job_1', 0, lease);
    expect((await store.jobs.require('job_1')).work).toEqual([]);
    await store.jobs.transition('job_1', 'paused', { reason: 'paused_by_operator', now: NOW + 1 });
    expect((await store.jobs.require('job_1')).work).toBeUndefined();
  });

  it('is stalled once every lease has run out a lease time ago, or at once when its holder is a dead process of this host', async () => {
    const account = await newAccount(store);
    const at = (now: number) => ({ now, leaseMs: LEASE_MS });
    await processingJob(store, account.id, 'job_1', [5]);
    await claimChunk(store, 'job_1', 0, 'worker-elsewhere', NOW);
    const held = await store.jobs.require('job_1');
    expect(jobActivity(held, at(NOW + 10)).stalled).toBe(false);
    // The lease ran out at NOW + LEASE_MS; a lease time later nothing has picked it up.
    expect(jobActivity(held, at(NOW + 2 * LEASE_MS - 1)).stalled).toBe(false);
    expect(jobActivity(held, at(NOW + 2 * LEASE_MS))).toMatchObject({ stalled: true, stalled_since: new Date(NOW + LEASE_MS).toISOString(), eta_seconds: null });

    await processingJob(store, account.id, 'job_2', [5], NOW + 1);
    await claimChunk(store, 'job_2', 0, `${os.hostname()}:${DEAD_PID}:abcd1234`, NOW + 1);
    const orphan = await store.jobs.require('job_2');
    // Its lease has not run out, but the process that holds it is gone: stalled since it last renewed.
    expect(jobActivity(orphan, at(NOW + 2))).toMatchObject({ stalled: true, stalled_since: new Date(NOW + 1).toISOString() });
    await store.jobs.freeLeasesOf(`${os.hostname()}:${DEAD_PID}:abcd1234`);
    expect((await store.jobs.require('job_2')).work).toEqual([]);
  });

  it('a queued job is not stalled, only waiting; a paused one is paused', async () => {
    const account = await newAccount(store);
    await processingJob(store, account.id, 'job_2', [5], NOW);
    await store.jobs.transition('job_2', 'paused', { reason: 'paused_by_operator', now: NOW + 2 });
    expect(jobActivity(await store.jobs.require('job_2'), { now: NOW + 100 * LEASE_MS, leaseMs: LEASE_MS }).stalled).toBe(false);
    await newJob(store, account.id, 'job_1', NOW + 3);
    expect(jobActivity(await store.jobs.require('job_1'), { now: NOW + 100 * LEASE_MS, leaseMs: LEASE_MS }).stalled).toBe(false);
  });

  it('counts rows per second over the job\'s run to its last checkpoint, and the time left from it', async () => {
    const account = await newAccount(store);
    const job = await processingJob(store, account.id, 'job_1', [100]);
    expect(jobActivity(job, { now: NOW, leaseMs: LEASE_MS })).toMatchObject({ rows_per_second: null, eta_seconds: null, last_progress_at: new Date(NOW).toISOString() });
    const progressed = { ...job, processedRows: 20, updatedAt: NOW + 10_000 };
    expect(jobActivity(progressed, { now: NOW + 10_001, leaseMs: LEASE_MS })).toMatchObject({
      rows_per_second: 2,
      eta_seconds: 40,
      last_progress_at: new Date(NOW + 10_000).toISOString(),
    });
  });
});
