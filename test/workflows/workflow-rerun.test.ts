import { beforeEach, describe, expect, it } from 'vitest';
import { rerunFromStep, type RerunDeps } from '../../src/workflows/rerun.js';
import { WorkflowRunDriver } from '../../src/workflows/run-driver.js';
import { stepLedgerId } from '../../src/workflows/step-executor.js';
import { TEST_STORES } from '../support/test-engine.js';
import { newAccount, NOW } from '../support/test-store.js';
import { drain, storeWorkflow, workflowDeps, workflowWorld } from '../support/workflow-world.js';

const STEPS = [
  { id: 'first', type: 'email_lookup', config: { input: { var: 'input.email' } } },
  { id: 'second', type: 'email_lookup', config: { input: { var: 'input.other' } } },
  { id: 'third', type: 'email_lookup', config: { input: { cat: ['x', { var: 'steps.second.output.email' }] } } },
];

describe.each(TEST_STORES)('rerun from a chosen step on %s', (kind) => {
  const w = workflowWorld(kind);
  let deps: RerunDeps;
  beforeEach(async () => {
    deps = { store: w.store, clock: w.clock, repeatFreeDays: 180, runsInFlight: 100 };
    await storeWorkflow(w.store, w.account, STEPS);
  });

  it('estimates, then runs a new run from the step: earlier outputs copied, neither executed nor charged again', async () => {
    w.provider.answer = (key) => (key === 'bob@example.com' ? { ok: false, retryable: false, code: 'lookup_failed', message: 'no answer' } : { ok: true, result: { gender: 'male', email: key } });
    await w.store.workflows.startRun({ id: 'run1', accountId: w.account, workflowId: 'wf1', input: JSON.stringify({ email: 'ann@example.com', other: 'bob@example.com' }), maxInFlight: 100, now: NOW });
    const driver = new WorkflowRunDriver(workflowDeps(w.store, w.clock, w.provider), 'a');
    await drain(driver);
    expect(await w.store.workflows.run(w.account, 'run1')).toMatchObject({ status: 'failed', failedStep: 'second', creditsUsed: 1 });

    // From `first`: its key is known and paid for (free); `second`'s is known, unpaid; `third` reads a step to be rerun.
    expect((await rerunFromStep(deps, w.account, 'run1', 'first', true)).estimate).toEqual({ credits: 2, lookupSteps: 3, freeRepeats: 1 });
    const dry = await rerunFromStep(deps, w.account, 'run1', 'second', true);
    expect(dry).toEqual({ run: null, estimate: { credits: 2, lookupSteps: 2, freeRepeats: 0 } });
    expect((await w.store.workflows.runs(w.account, { limit: 10, offset: 0 })).total).toBe(1);

    w.provider.answer = (key) => ({ ok: true, result: { gender: 'male', email: key } });
    const calls = w.provider.calls;
    const { run } = await rerunFromStep(deps, w.account, 'run1', 'second', false);
    expect(run).toMatchObject({ status: 'queued', cursor: 1, stepsCompleted: 1, workflowVersion: 1 });
    await drain(driver);
    const done = (await w.store.workflows.run(w.account, run!.id))!;
    expect(done).toMatchObject({ status: 'completed', stepsCompleted: 3, creditsUsed: 2 });
    expect(JSON.parse(done.outputs)).toMatchObject({ first: { email: 'ann@example.com' }, second: { email: 'bob@example.com' }, third: { email: 'xbob@example.com' } });
    expect(w.provider.calls - calls).toBe(2);
    const charges = (await w.store.billing.ledger(w.account)).filter((l) => l.reason === 'charge').map((l) => l.id);
    expect(charges.sort()).toEqual([stepLedgerId(w.account, 'run1', 'first'), stepLedgerId(w.account, run!.id, 'second'), stepLedgerId(w.account, run!.id, 'third')].sort());
    const { logs } = await w.store.workflows.logs(w.account, run!.id, { limit: 100, offset: 0 });
    expect(JSON.parse(logs[0]!.metadata)).toEqual({ source_run_id: 'run1', cursor: 1 });
  });

  it('refuses a run still going (409), a step its version does not have (422), another w.account\'s run (404), and past the runs-in-flight limit (429)', async () => {
    await w.store.workflows.startRun({ id: 'run1', accountId: w.account, workflowId: 'wf1', input: '{}', maxInFlight: 100, now: NOW });
    await expect(rerunFromStep(deps, w.account, 'run1', 'first', false)).rejects.toMatchObject({ code: 'invalid_state', statusCode: 409 });
    await w.store.workflows.cancel(w.account, 'run1', NOW);
    await expect(rerunFromStep(deps, w.account, 'run1', 'nope', true)).rejects.toMatchObject({ code: 'invalid_request', statusCode: 422 });
    const other = (await newAccount(w.store, 1)).id;
    await expect(rerunFromStep(deps, other, 'run1', 'first', true)).rejects.toMatchObject({ code: 'workflow_run_not_found', statusCode: 404 });
    await w.store.workflows.startRun({ id: 'run2', accountId: w.account, workflowId: 'wf1', input: '{}', maxInFlight: 100, now: NOW });
    await expect(rerunFromStep({ ...deps, runsInFlight: 1 }, w.account, 'run1', 'first', false)).rejects.toMatchObject({ code: 'too_many_runs', statusCode: 429 });
  });
});
