import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { LEASE_MS, newAccount, newJob, NOW, openTestStore, type TestStore } from '../support/test-store.js';
import { newMonitor } from './monitor-fixtures.js';

const snapshot = (seq: number, target: string, changes: string | null = null) => ({ seq, target, data: `{"n":${seq}}`, changes, alert: null });

/** Executing runs: leased start and compare steps, fenced checkpoints, one end. `a` and `b` are two processes on one database. */
describe.each(TEST_STORES)('Store contract on %s: monitor run execution', (kind) => {
  let opened: TestStore;
  let store: Store;
  let account: string;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
    account = (await newAccount(store)).id;
  });
  afterEach(() => opened.close());

  // Without the serialised claim both processes would start the one run, and make its job twice.
  it('two processes claiming together start a queued run once, and a second run of the monitor waits for the first', async () => {
    const [a, b] = await Promise.all([opened.openPeer(), opened.openPeer()]);
    await store.monitors.create(newMonitor(account, 'm1'), { targets: ['x@example.com', 'y@example.com'] });
    const run = await store.monitors.queueManualRun(account, 'm1', 'r1', NOW);
    const claims = await Promise.all([a.monitorRuns.claimStart('a', NOW, LEASE_MS), b.monitorRuns.claimStart('b', NOW, LEASE_MS)]);
    const taken = claims.filter((c) => c !== undefined);
    expect(taken).toHaveLength(1);
    expect(taken[0]!.run).toMatchObject({ id: run.id, status: 'running', startedAt: NOW });
    expect(taken[0]!.monitor).toMatchObject({ id: 'm1', type: 'email', trackedFields: ['breached', 'count'] });
    expect(await store.monitorRuns.targetPage('m1', null, 1)).toEqual([{ target: 'x@example.com', position: 1 }]);
    expect(await store.monitorRuns.targetPage('m1', { target: 'x@example.com', position: 1 }, 10)).toEqual([{ target: 'y@example.com', position: 2 }]);

    // A scheduled run of the same monitor queued meanwhile is not started while r1 runs.
    const [scheduled] = await store.monitors.claimDueRuns(NOW, 10);
    expect(scheduled).toBeDefined();
    expect(await a.monitorRuns.claimStart('a', NOW, LEASE_MS)).toBeUndefined();
  });

  // Without the epoch in the WHERE a starter whose lease ran out would record its job over the new owner's.
  it('a start whose lease ran out is taken over, and the old owner can no longer record a job', async () => {
    await store.monitors.create(newMonitor(account, 'm1'), { targets: ['x@example.com'] });
    await store.monitors.queueManualRun(account, 'm1', 'r1', NOW);
    const first = (await store.monitorRuns.claimStart('a', NOW, LEASE_MS))!;
    expect(await store.monitorRuns.claimStart('b', NOW + 1, LEASE_MS)).toBeUndefined();
    const second = (await store.monitorRuns.claimStart('b', NOW + LEASE_MS, LEASE_MS))!;
    expect(second.run).toMatchObject({ id: 'r1', startedAt: NOW });
    await newJob(store, account, 'job_r1');
    expect(await store.monitorRuns.recordJob('r1', first.lease, 'job_r1', 1)).toBe(false);
    expect(await store.monitorRuns.recordJob('r1', second.lease, 'job_r1', 1)).toBe(true);
    // The job is queued, not ended: nothing to compare yet.
    expect(await store.monitorRuns.claimCompare('c', NOW + LEASE_MS, LEASE_MS)).toBeUndefined();
  });

  // Without the cursor in the WHERE a batch done twice would count its changes twice; without the
  // status check a run would end (and announce itself) twice.
  it('comparison checkpoints are fenced by epoch and cursor, last results are written, and a run ends once with its events', async () => {
    await store.monitors.create(newMonitor(account, 'm1'), { targets: ['x@example.com', 'y@example.com'] });
    await store.monitors.queueManualRun(account, 'm1', 'r1', NOW);
    const start = (await store.monitorRuns.claimStart('a', NOW, LEASE_MS))!;
    await newJob(store, account, 'job_r1');
    expect(await store.monitorRuns.recordJob('r1', start.lease, 'job_r1', 2)).toBe(true);
    await store.jobs.transition('job_r1', 'cancelled', { reason: 'cancelled', now: NOW });
    const claim = (await store.monitorRuns.claimCompare('a', NOW, LEASE_MS))!;
    expect(claim).toMatchObject({ compareCursor: 0, jobStatus: 'cancelled' });

    const commit = { runId: 'r1', monitorId: 'm1', lease: claim.lease, cursor: 0, snapshots: [snapshot(0, 'x@example.com', '{"count":{"old":0,"new":1}}')], lastData: [{ target: 'x@example.com', data: '{"count":1}' }], changes: 1, alerts: 0, leaseUntil: NOW + LEASE_MS };
    expect(await store.monitorRuns.commitComparison(commit)).toBe(true);
    expect(await store.monitorRuns.commitComparison(commit)).toBe(false);
    expect(await store.monitorRuns.commitComparison({ ...commit, cursor: 1, lease: { ...claim.lease, epoch: claim.lease.epoch - 1 } })).toBe(false);
    expect(await store.monitorRuns.commitComparison({ ...commit, cursor: 1, snapshots: [snapshot(1, 'y@example.com')], lastData: [{ target: 'gone@example.com', data: '{}' }], changes: 0 })).toBe(true);
    expect(await store.monitorRuns.lastData('m1', ['x@example.com', 'y@example.com', 'gone@example.com'])).toEqual(
      new Map([['x@example.com', '{"count":1}'], ['y@example.com', null]]),
    );
    expect((await store.monitorRuns.snapshotPage('r1', { afterSeq: -1, limit: 10, changedOnly: true })).map((s) => s.target)).toEqual(['x@example.com']);
    expect(await store.monitorRuns.snapshotPage('r1', { afterSeq: -1, limit: 10, changedOnly: false })).toHaveLength(2);

    const event = { id: 'evt_monitor_run_r1', event: 'monitor.run.completed', accountId: account, payload: { event: 'monitor.run.completed' } };
    const end = { runId: 'r1', lease: claim.lease, status: 'completed' as const, reason: null, totalRecords: 2, creditsUsed: 0, events: [event], now: NOW + 5 };
    expect(await store.monitorRuns.finish(end)).toBe(true);
    expect(await store.monitorRuns.finish(end)).toBe(false);
    const { runs } = await store.monitors.runs(account, 'm1', { limit: 10, offset: 0 });
    expect(runs[0]).toMatchObject({ status: 'completed', totalRecords: 2, changesDetected: 1, creditsUsed: 0, finishedAt: NOW + 5 });
    expect(await store.monitorRuns.claimCompare('b', NOW + 10 * LEASE_MS, LEASE_MS)).toBeUndefined();
  });
});
