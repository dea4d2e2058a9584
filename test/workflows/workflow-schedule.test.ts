import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/shared/clock.js';
import { silentLogger } from '../../src/shared/logger.js';
import type { Store } from '../../src/storage/store.js';
import { WorkflowService } from '../../src/workflows/workflow-service.js';
import { fireDueSchedules, scheduledRunId } from '../../src/workflows/workflow-scheduler.js';
import { TEST_STORES } from '../support/test-engine.js';
import { newAccount, openTestStore, type TestStore } from '../support/test-store.js';

const T0 = Date.UTC(2026, 0, 10, 12, 30);
const HOUR = 3_600_000;
const STEPS = [{ id: 't', type: 'transform', config: { expression: { var: 'input.scheduled_at' } } }];

describe.each(TEST_STORES)('workflow schedules on %s', (kind) => {
  let opened: TestStore;
  let store: Store;
  let account: string;
  let clock: FakeClock;
  let service: WorkflowService;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
    account = (await newAccount(store, 10)).id;
    clock = new FakeClock(T0);
    service = new WorkflowService(store, clock, 100);
  });
  afterEach(() => opened.close());

  const fire = (s: Store = store, runsInFlight = 100) => fireDueSchedules({ store: s, clock, log: silentLogger(), runsInFlight });
  const runsOf = async (workflowId: string) => (await store.workflows.runs(account, { limit: 100, offset: 0, workflowId })).runs;

  it('one run per due time across processes firing at once, one catch-up after downtime, then the next time after now', async () => {
    const wf = await service.create(account, { name: 'hourly', trigger: { type: 'schedule', cron: '0 * * * *', timezone: 'Europe/Berlin' }, steps: STEPS });
    expect(await fire()).toEqual([]);
    clock.set(T0 + 30 * 60_000);
    const peer = await opened.openPeer();
    const [a, b] = await Promise.all([fire(store), fire(peer)]);
    expect([...a, ...b]).toEqual([scheduledRunId(wf.id, Date.UTC(2026, 0, 10, 13))]);
    const [run] = await runsOf(wf.id);
    expect(run).toMatchObject({ status: 'queued', workflowVersion: 1, input: JSON.stringify({ scheduled_at: '2026-01-10T13:00:00.000Z' }) });
    expect(await fire()).toEqual([]);

    // Every process down for five fire times: one run when one comes back, not five.
    clock.set(Date.UTC(2026, 0, 10, 18, 10));
    expect(await fire()).toEqual([scheduledRunId(wf.id, Date.UTC(2026, 0, 10, 14))]);
    expect(await fire()).toEqual([]);
    clock.set(Date.UTC(2026, 0, 10, 19));
    expect(await fire()).toEqual([scheduledRunId(wf.id, Date.UTC(2026, 0, 10, 19))]);
    expect(await runsOf(wf.id)).toHaveLength(3);
  });

  it('a paused or deleted workflow fires nothing; made active again, it starts at its next time; an account at its limit skips the time', async () => {
    const wf = await service.create(account, { name: 'hourly', trigger: { type: 'schedule', cron: '0 * * * *' }, steps: STEPS });
    await service.update(account, wf.id, { name: 'hourly', status: 'paused', trigger: { type: 'schedule', cron: '0 * * * *' }, steps: STEPS });
    clock.set(T0 + 3 * HOUR);
    expect(await fire()).toEqual([]);
    await service.update(account, wf.id, { name: 'hourly', status: 'active', trigger: { type: 'schedule', cron: '0 * * * *' }, steps: STEPS });
    expect(await fire()).toEqual([]);
    clock.advance(HOUR);
    expect(await fire(store, 1)).toHaveLength(1);
    clock.advance(HOUR);
    expect(await fire(store, 1)).toEqual([]);
    expect(await runsOf(wf.id)).toHaveLength(1);
    await service.remove(account, wf.id);
    clock.advance(HOUR);
    expect(await fire()).toEqual([]);
  });
});
