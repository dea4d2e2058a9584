import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JOB_STATUSES } from '../../src/storage/job-states.js';
import type { Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { claimChunk, DAY_MS, LEASE_MS, newAccount, newJob, NOW, openTestStore, processingJob, subscribe, type TestStore } from '../support/test-store.js';

const WINDOW = 30 * DAY_MS;

/** A queued job cancelled at `at`: finished then, with its end event in the outbox. */
async function finishedJob(store: Store, accountId: string, id: string, at: number): Promise<void> {
  await newJob(store, accountId, id, at);
  await store.jobs.transition(id, JOB_STATUSES.cancelled, { reason: 'cancelled', now: at });
}

async function rejection(call: Promise<unknown>): Promise<{ code?: string; statusCode?: number; message: string }> {
  try {
    await call;
  } catch (e: unknown) {
    return e as { code?: string; statusCode?: number; message: string };
  }
  throw new Error('expected a rejection');
}

describe.each(TEST_STORES)('Store contract on %s: job deletion and retention', (kind) => {
  let opened: TestStore;
  let store: Store;
  let account: string;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
    account = (await newAccount(store)).id;
  });
  afterEach(() => opened.close());

  it('marks a finished job deleted once: a second mark returns the first, unchanged and not marked again', async () => {
    await finishedJob(store, account, 'job_a', NOW);
    expect(await store.retention.deletion('job_a')).toBeUndefined();

    const first = await store.retention.markDeleted('job_a', 'requested', NOW + 1);
    expect(first).toEqual({
      marked: true,
      deletion: { jobId: 'job_a', accountId: account, inputKey: 'inputs/job_a.csv', deletedAt: NOW + 1, reason: 'requested', purgedAt: null },
    });
    const again = await store.retention.markDeleted('job_a', 'retention', NOW + 5);
    expect(again).toEqual({ marked: false, deletion: first.deletion });
    expect(await store.retention.deletion('job_a')).toEqual(first.deletion);
    // The row stays, with the status it ended with.
    expect((await store.jobs.require('job_a')).status).toBe(JOB_STATUSES.cancelled);
  });

  it('refuses a job that is not finished with invalid_state, saying to cancel it first, and an unknown job with job_not_found', async () => {
    await newJob(store, account, 'job_queued');
    const refused = await rejection(store.retention.markDeleted('job_queued', 'requested', NOW));
    expect(refused).toMatchObject({ code: 'invalid_state', statusCode: 409 });
    expect(refused.message).toMatch(/queued; cancel it first/);
    expect(await store.retention.deletion('job_queued')).toBeUndefined();
    expect(await rejection(store.retention.markDeleted('job_none', 'requested', NOW))).toMatchObject({ code: 'job_not_found', statusCode: 404 });
  });

  it('refuses a finished job while a worker still holds a live lease on one of its chunks, and takes it once the lease has run out', async () => {
    await processingJob(store, account, 'job_p', [5]);
    await claimChunk(store, 'job_p', 0, 'worker-a', NOW);
    await store.jobs.transition('job_p', JOB_STATUSES.cancelled, { reason: 'cancelled', now: NOW + 1 });

    expect(await rejection(store.retention.markDeleted('job_p', 'requested', NOW + 2))).toMatchObject({ code: 'invalid_state', statusCode: 409 });
    expect(await store.retention.expire(NOW + DAY_MS, NOW + 2, 10)).toEqual([]);
    const later = NOW + LEASE_MS + 1;
    expect((await store.retention.markDeleted('job_p', 'requested', later)).marked).toBe(true);
  });

  it('never lets a deleted job change status again: a resume of a deleted failed job is refused and it stays failed', async () => {
    await newJob(store, account, 'job_f');
    await store.jobs.transition('job_f', JOB_STATUSES.failed, { reason: 'x', message: 'boom', now: NOW });
    await store.retention.markDeleted('job_f', 'requested', NOW + 1);
    await expect(store.jobs.resume('job_f', NOW + 2)).rejects.toThrow(/job_deleted/);
    expect((await store.jobs.require('job_f')).status).toBe(JOB_STATUSES.failed);
  });

  it('expires jobs that finished before the window, oldest first and `limit` at a time, and never a recent, unfinished or deleted one', async () => {
    await finishedJob(store, account, 'job_31', NOW - 31 * DAY_MS);
    await finishedJob(store, account, 'job_40', NOW - 40 * DAY_MS);
    await finishedJob(store, account, 'job_35', NOW - 35 * DAY_MS);
    await finishedJob(store, account, 'job_29', NOW - 29 * DAY_MS);
    await newJob(store, account, 'job_old_queued', NOW - 60 * DAY_MS);
    await finishedJob(store, account, 'job_gone', NOW - 50 * DAY_MS);
    await store.retention.markDeleted('job_gone', 'requested', NOW - 45 * DAY_MS);

    const first = await store.retention.expire(NOW - WINDOW, NOW, 2);
    expect(first.map((d) => d.jobId)).toEqual(['job_40', 'job_35']);
    expect(first.every((d) => d.reason === 'retention' && d.deletedAt === NOW && d.purgedAt === null)).toBe(true);
    expect((await store.retention.expire(NOW - WINDOW, NOW, 2)).map((d) => d.jobId)).toEqual(['job_31']);
    expect(await store.retention.expire(NOW - WINDOW, NOW, 2)).toEqual([]);
    expect(await store.retention.deletion('job_29')).toBeUndefined();
    expect(await store.retention.deletion('job_old_queued')).toBeUndefined();
    expect((await store.retention.deletion('job_gone'))?.reason).toBe('requested');
  });

  it('lists deleted jobs whose objects may remain, oldest deletion first, until each is marked purged (idempotently)', async () => {
    for (const id of ['job_1', 'job_2', 'job_3']) await finishedJob(store, account, id, NOW);
    await store.retention.markDeleted('job_2', 'requested', NOW + 1);
    await store.retention.markDeleted('job_1', 'requested', NOW + 2);
    expect((await store.retention.unpurged(10)).map((d) => d.jobId)).toEqual(['job_2', 'job_1']);
    expect((await store.retention.unpurged(1)).map((d) => d.jobId)).toEqual(['job_2']);

    await store.retention.markPurged('job_2', NOW + 3);
    await store.retention.markPurged('job_2', NOW + 9);
    expect((await store.retention.unpurged(10)).map((d) => d.jobId)).toEqual(['job_1']);
    expect((await store.retention.deletion('job_2'))?.purgedAt).toBe(NOW + 3);
    // A purged job's second delete changes nothing and does not ask for the objects again.
    expect(await store.retention.markDeleted('job_2', 'requested', NOW + 10)).toMatchObject({ marked: false, deletion: { purgedAt: NOW + 3 } });
  });

  it('purges outbox events sent before the cutoff, `limit` at a time, and keeps recent and unsent ones', async () => {
    await finishedJob(store, account, 'job_old1', NOW - 40 * DAY_MS);
    await finishedJob(store, account, 'job_old2', NOW - 40 * DAY_MS);
    await store.deliveries.relayOutbox(NOW - 40 * DAY_MS);
    await finishedJob(store, account, 'job_new', NOW - DAY_MS);
    await store.deliveries.relayOutbox(NOW - DAY_MS);
    await finishedJob(store, account, 'job_unsent', NOW - 50 * DAY_MS);

    expect(await store.retention.purgeOutbox(NOW - WINDOW, 1)).toBe(1);
    expect(await store.retention.purgeOutbox(NOW - WINDOW, 10)).toBe(1);
    expect(await store.retention.purgeOutbox(NOW - WINDOW, 10)).toBe(0);
    // The unsent event is still there for the relay: a webhook made now gets it.
    const webhook = await subscribe(store, account);
    await store.deliveries.relayOutbox(NOW);
    const relayed = (await store.deliveries.list(webhook, 10)).map((d) => (d.payload as { data: { id: string } }).data.id);
    expect(relayed).toEqual(['job_unsent']);
  });

  it('purges finished deliveries last tried before the cutoff, and keeps pending and recent ones', async () => {
    const webhook = await subscribe(store, account);
    const attempt = (status: 'success' | 'failed', at: number) => ({ status, payload: {}, responseStatus: 200, responseBody: null, errorCode: null, nextAttemptAt: null, at });
    const oldOk = await store.deliveries.recordTest(webhook, 'msg_old_ok', attempt('success', NOW - 40 * DAY_MS));
    const oldFailed = await store.deliveries.recordTest(webhook, 'msg_old_failed', attempt('failed', NOW - 31 * DAY_MS));
    const recent = await store.deliveries.recordTest(webhook, 'msg_recent', attempt('success', NOW - 29 * DAY_MS));
    await finishedJob(store, account, 'job_pending', NOW - 40 * DAY_MS);
    await store.deliveries.relayOutbox(NOW - 40 * DAY_MS);

    expect(await store.retention.purgeDeliveries(NOW - WINDOW, 10)).toBe(2);
    expect(await store.deliveries.get(oldOk.id)).toBeUndefined();
    expect(await store.deliveries.get(oldFailed.id)).toBeUndefined();
    expect(await store.deliveries.get(recent.id)).toBeDefined();
    const left = await store.deliveries.list(webhook, 10);
    expect(left.map((d) => d.status).sort()).toEqual(['pending', 'success']);
  });

  it('two processes expiring at once never mark one job twice, and together mark every old job', async () => {
    for (let i = 0; i < 12; i++) await finishedJob(store, account, `job_${String(i).padStart(2, '0')}`, NOW - 40 * DAY_MS);
    const peer = await opened.openPeer();
    const [a, b] = await Promise.all([
      (async () => [...(await store.retention.expire(NOW - WINDOW, NOW, 3)), ...(await store.retention.expire(NOW - WINDOW, NOW, 3))])(),
      (async () => [...(await peer.retention.expire(NOW - WINDOW, NOW, 3)), ...(await peer.retention.expire(NOW - WINDOW, NOW, 3))])(),
    ]);
    const ids = [...a, ...b].map((d) => d.jobId);
    expect(new Set(ids).size).toBe(ids.length);
    const rest = [];
    for (let batch = await store.retention.expire(NOW - WINDOW, NOW, 3); batch.length > 0; batch = await store.retention.expire(NOW - WINDOW, NOW, 3)) rest.push(...batch);
    expect([...ids, ...rest.map((d) => d.jobId)].sort()).toEqual(Array.from({ length: 12 }, (_, i) => `job_${String(i).padStart(2, '0')}`));
  });
});
