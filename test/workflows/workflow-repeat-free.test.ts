import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/storage/store.js';
import { WorkflowRunDriver } from '../../src/workflows/run-driver.js';
import { stepLedgerId } from '../../src/workflows/step-executor.js';
import { TEST_STORES } from '../support/test-engine.js';
import { DAY_MS, LEASE_MS, newAccount, NOW, SINCE } from '../support/test-store.js';
import { drain, LOOKUP_ONLY, storeWorkflow, workflowDeps, workflowWorld } from '../support/workflow-world.js';

/**
 * The repeat-free rule inside workflow lookup steps: an account pays once per key per window,
 * through the billing cache the jobs and single lookups use (DESIGN.md guarantee 1).
 */
describe.each(TEST_STORES)('repeat-free lookup steps on %s', (kind) => {
  const w = workflowWorld(kind);
  beforeEach(() => storeWorkflow(w.store, w.account, LOOKUP_ONLY));
  const start = (runId: string, email = 'ann@example.com') =>
    w.store.workflows.startRun({ id: runId, accountId: w.account, workflowId: 'wf1', input: JSON.stringify({ email }), maxInFlight: 100, now: w.clock.now() });
  const charges = async () => (await w.store.billing.ledger(w.account)).filter((l) => l.reason === 'charge');
  const credits = async () => (await w.store.billing.requireAccount(w.account)).credits;
  const stepCredits = async (runId: string) => {
    const { logs } = await w.store.workflows.logs(w.account, runId, { limit: 100, offset: 0 });
    return logs.filter((l) => l.stepId === 'lookup1').map((l) => (JSON.parse(l.metadata) as { credits: number }).credits);
  };

  it('a second run of the same key is free, inside the window; after the window it is charged again', async () => {
    const driver = new WorkflowRunDriver(workflowDeps(w.store, w.clock, w.provider), 'a');
    await start('run1');
    await drain(driver);
    await start('run2', 'Ann@Example.com');
    await drain(driver);
    expect(await w.store.workflows.run(w.account, 'run1')).toMatchObject({ status: 'completed', creditsUsed: 1 });
    expect(await w.store.workflows.run(w.account, 'run2')).toMatchObject({ status: 'completed', creditsUsed: 0 });
    expect(await stepCredits('run2')).toEqual([0]);
    expect((await charges()).map((c) => c.id)).toEqual([stepLedgerId(w.account, 'run1', 'lookup1')]);
    expect(await credits()).toBe(9);
    // The key is in the shared billing cache: a job or a single lookup of it is a free repeat too.
    expect(await w.store.billing.freshlyBilled(w.account, 'gender', ['ann@example.com'], SINCE)).toEqual(new Set(['ann@example.com']));

    w.clock.advance(181 * DAY_MS);
    await start('run3');
    await drain(driver);
    expect(await w.store.workflows.run(w.account, 'run3')).toMatchObject({ status: 'completed', creditsUsed: 1 });
    expect(await credits()).toBe(8);
  });

  it('a key a single lookup paid for is free in a run, and a run with no credits left still gets its free repeat', async () => {
    const paid = await w.store.billing.commitLookup({ accountId: w.account, kind: 'gender', charge: { type: 'repeat_free', key: 'bob@example.com', since: SINCE, batchId: randomUUID() }, cache: [], now: NOW });
    expect(paid).toEqual({ ok: true, credits: 1 });
    const poor = (await newAccount(w.store, 1)).id;
    await storeWorkflow(w.store, poor, LOOKUP_ONLY, 'wf_poor');
    await w.store.billing.commitLookup({ accountId: poor, kind: 'gender', charge: { type: 'repeat_free', key: 'bob@example.com', since: SINCE, batchId: randomUUID() }, cache: [], now: NOW });
    expect((await w.store.billing.requireAccount(poor)).credits).toBe(0);

    await start('run1', 'bob@example.com');
    await w.store.workflows.startRun({ id: 'poor1', accountId: poor, workflowId: 'wf_poor', input: JSON.stringify({ email: 'bob@example.com' }), maxInFlight: 10, now: NOW });
    await w.store.workflows.startRun({ id: 'poor2', accountId: poor, workflowId: 'wf_poor', input: JSON.stringify({ email: 'eve@example.com' }), maxInFlight: 10, now: NOW });
    await drain(new WorkflowRunDriver(workflowDeps(w.store, w.clock, w.provider), 'a'));
    expect(await w.store.workflows.run(w.account, 'run1')).toMatchObject({ status: 'completed', creditsUsed: 0 });
    expect(await w.store.workflows.run(poor, 'poor1')).toMatchObject({ status: 'completed', creditsUsed: 0 });
    expect(await w.store.workflows.run(poor, 'poor2')).toMatchObject({ status: 'failed', errorCode: 'insufficient_credits' });
    expect(await charges()).toHaveLength(1);
    expect(await credits()).toBe(9);
  });

  it('a key paid for between the check and the commit makes the step free: the commit is refused and done again without the charge', async () => {
    await start('run1');
    const real = w.store.workflows;
    let raced = false;
    const racing = Object.assign(Object.create(real) as typeof real, {
      async commitStep(c: Parameters<typeof real.commitStep>[0]) {
        if (!raced && c.charge) {
          raced = true;
          // A single lookup of the same key commits first.
          await w.store.billing.commitLookup({ accountId: w.account, kind: 'gender', charge: { type: 'repeat_free', key: 'ann@example.com', since: SINCE, batchId: randomUUID() }, cache: [], now: NOW });
        }
        return real.commitStep(c);
      },
    });
    await drain(new WorkflowRunDriver(workflowDeps({ ...w.store, workflows: racing }, w.clock, w.provider), 'a'));
    expect(raced).toBe(true);
    expect(await w.store.workflows.run(w.account, 'run1')).toMatchObject({ status: 'completed', creditsUsed: 0 });
    expect(await stepCredits('run1')).toEqual([0]);
    const lines = await charges();
    expect(lines).toHaveLength(1);
    expect(lines[0]!.id).not.toBe(stepLedgerId(w.account, 'run1', 'lookup1'));
    expect(await credits()).toBe(9);
  });

  it('crashes before the commit, with two runs of one key racing on two processes, charge the key once', async () => {
    await start('run1');
    await start('run2');
    const dying = Object.assign(Object.create(w.store.workflows) as Store['workflows'], { commitStep: async () => Promise.reject(new Error('killed before the commit')) });
    const crashed = new WorkflowRunDriver(workflowDeps({ ...w.store, workflows: dying }, w.clock, w.provider), 'a');
    expect(await crashed.tick()).toBe(true);
    expect(await crashed.tick()).toBe(true);
    expect(await charges()).toEqual([]);

    w.clock.advance(LEASE_MS);
    const peer = await w.opened.openPeer();
    const [b, c] = [new WorkflowRunDriver(workflowDeps(w.store, w.clock, w.provider), 'b'), new WorkflowRunDriver(workflowDeps(peer, w.clock, w.provider), 'c')];
    await Promise.all([drain(b), drain(c)]);
    const runs = [(await w.store.workflows.run(w.account, 'run1'))!, (await w.store.workflows.run(w.account, 'run2'))!];
    expect(runs.map((r) => r.status)).toEqual(['completed', 'completed']);
    expect(runs.map((r) => r.creditsUsed).sort()).toEqual([0, 1]);
    expect(await charges()).toHaveLength(1);
    expect(await credits()).toBe(9);
    expect(w.provider.calls).toBeGreaterThanOrEqual(3);
  });
});
