import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/shared/clock.js';
import { silentLogger } from '../../src/shared/logger.js';
import type { Store } from '../../src/storage/store.js';
import { fireMonitorEvents, monitorEventRunId } from '../../src/workflows/workflow-scheduler.js';
import { WorkflowService } from '../../src/workflows/workflow-service.js';
import { newMonitor } from '../monitors/monitor-fixtures.js';
import { openSeededStore, type SeedFn } from '../monitors/result-fixtures.js';
import { TEST_STORES } from '../support/test-engine.js';
import { newAccount, NOW } from '../support/test-store.js';

const STEPS = [{ id: 'first', type: 'transform', config: { expression: { var: 'input.changes' } } }];
const CHANGED = [
  { target: 'a@example.com', data: { breached: true }, changes: { breached: { old: false, new: true } } },
  { target: 'b@example.com', data: { breached: false }, changes: null },
];

describe.each(TEST_STORES)('monitor_event triggers on %s', (kind) => {
  let store: Store;
  let seed: SeedFn;
  let close: () => Promise<void>;
  let account: string;
  let clock: FakeClock;
  let service: WorkflowService;

  beforeEach(async () => {
    ({ store, seed, close } = await openSeededStore(kind));
    account = (await newAccount(store, 10)).id;
    await store.monitors.create(newMonitor(account, 'mon1'));
    await store.monitors.create(newMonitor(account, 'mon2'));
    clock = new FakeClock(NOW);
    service = new WorkflowService(store, clock, 100);
  });
  afterEach(() => close());

  const fire = (runsInFlight = 100) => fireMonitorEvents({ store, clock, log: silentLogger(), runsInFlight });
  const completedRun = (id: string, finishedAt: number, over: Parameters<SeedFn>[0] extends infer R ? Partial<R> : never = {}) =>
    seed({ id, monitorId: 'mon1', accountId: account, createdAt: finishedAt - 10, startedAt: finishedAt - 10, finishedAt, changesDetected: 1, totalRecords: 2, snapshots: CHANGED, ...over });
  const runsOf = async (workflowId: string) => (await store.workflows.runs(account, { limit: 100, offset: 0, workflowId })).runs;

  it('a completed monitor run with changes starts one run with the changes as input, however many processes sweep; earlier runs, runs without changes and other monitors start none', async () => {
    await completedRun('before', NOW - 1000);
    const wf = await service.create(account, { name: 'on change', trigger: { type: 'monitor_event', monitor_id: 'mon1' }, steps: STEPS });
    await completedRun('r1', NOW + 1000);
    await completedRun('quiet', NOW + 2000, { changesDetected: 0, snapshots: [] });
    await completedRun('broken', NOW + 3000, { status: 'failed' });
    await completedRun('other', NOW + 4000, { monitorId: 'mon2' });

    const [a, b] = await Promise.all([fire(), fire()]);
    expect([...a, ...b]).toEqual([monitorEventRunId(wf.id, 'r1')]);
    const [run] = await runsOf(wf.id);
    expect(run).toMatchObject({ id: monitorEventRunId(wf.id, 'r1'), status: 'queued', workflowVersion: 1 });
    expect(JSON.parse(run!.input)).toEqual({
      event: 'monitor.run.completed',
      monitor_id: 'mon1',
      monitor_run_id: 'r1',
      finished_at: new Date(NOW + 1000).toISOString(),
      changes_detected: 1,
      changes: [{ target: 'a@example.com', changes: { breached: { old: false, new: true } } }],
      changes_truncated: false,
    });
    expect(await fire()).toEqual([]);

    await completedRun('r2', NOW + 5000);
    expect(await fire()).toEqual([monitorEventRunId(wf.id, 'r2')]);
  });

  it('a paused workflow takes up no events, and made active again does not replay them; an event at the runs-in-flight limit passes without a run', async () => {
    const wf = await service.create(account, { name: 'on change', trigger: { type: 'monitor_event', monitor_id: 'mon1' }, steps: STEPS });
    await service.update(account, wf.id, { name: 'on change', status: 'paused', trigger: { type: 'monitor_event', monitor_id: 'mon1' }, steps: STEPS });
    await completedRun('while_paused', NOW + 1000);
    expect(await fire()).toEqual([]);
    clock.set(NOW + 2000);
    await service.update(account, wf.id, { name: 'on change', status: 'active', trigger: { type: 'monitor_event', monitor_id: 'mon1' }, steps: STEPS });
    expect(await fire()).toEqual([]);

    // An edit that stays active on the same monitor keeps its place: the event after it is taken up.
    await completedRun('r1', NOW + 3000);
    clock.set(NOW + 4000);
    await service.update(account, wf.id, { name: 'renamed', trigger: { type: 'monitor_event', monitor_id: 'mon1' }, steps: STEPS });
    expect(await fire()).toEqual([monitorEventRunId(wf.id, 'r1')]);

    await completedRun('r2', NOW + 5000);
    expect(await fire(1)).toEqual([]);
    expect((await runsOf(wf.id)).map((r) => r.id)).toEqual([monitorEventRunId(wf.id, 'r1')]);
    expect(await fire()).toEqual([]);
  });

  it('the trigger must name a monitor of the account', async () => {
    const other = (await newAccount(store, 1)).id;
    await store.monitors.create(newMonitor(other, 'theirs'));
    for (const trigger of [{ type: 'monitor_event' }, { type: 'monitor_event', monitor_id: 'nope' }, { type: 'monitor_event', monitor_id: 'theirs' }]) {
      await expect(service.create(account, { name: 'x', trigger, steps: STEPS })).rejects.toMatchObject({ code: 'invalid_workflow', statusCode: 422 });
    }
  });
});
