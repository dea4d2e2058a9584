import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/shared/clock.js';
import type { Store } from '../../src/storage/store.js';
import { validateDefinition } from '../../src/workflows/definition.js';
import { WorkflowRunDriver, type RunDriverDeps } from '../../src/workflows/run-driver.js';
import { stepLedgerId, stepMessageId } from '../../src/workflows/step-executor.js';
import { TEST_STORES } from '../support/test-engine.js';
import { LEASE_MS, newAccount, NOW, openTestStore, subscribe, type TestStore } from '../support/test-store.js';
import { drain, fakeGender, storeWorkflow, workflowDeps } from '../support/workflow-world.js';

const FIVE_STEPS = (webhookId: string) => [
  { id: 'lookup1', type: 'email_lookup', config: { input: { var: 'input.email' } } },
  { id: 'is_female', type: 'condition', config: { expression: { '==': [{ var: 'steps.lookup1.output.gender' }, 'female'] } } },
  { id: 'shape', type: 'transform', config: { expression: { object: { who: { var: 'input.email' }, gender: { var: 'steps.lookup1.output.gender' } } } } },
  { id: 'wait', type: 'delay', config: { seconds: 60 } },
  { id: 'notify', type: 'webhook', config: { webhook_id: webhookId, body: { var: 'steps.shape.output' } } },
];

describe.each(TEST_STORES)('Workflow runs on %s', (kind) => {
  let opened: TestStore;
  let store: Store;
  let account: string;
  let clock: FakeClock;
  let provider: ReturnType<typeof fakeGender>;

  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
    account = (await newAccount(store, 10)).id;
    clock = new FakeClock(NOW);
    provider = fakeGender();
  });
  afterEach(() => opened.close());

  const deps = (over: Partial<RunDriverDeps> = {}) => workflowDeps(store, clock, provider, over);
  const createWorkflow = (steps: unknown[], id = 'wf1', status = 'active') => storeWorkflow(store, account, steps, id, status);

  const start = (runId: string, input: unknown = { email: 'ann@example.com' }, workflowId = 'wf1', maxInFlight = 100) =>
    store.workflows.startRun({ id: runId, accountId: account, workflowId, input: JSON.stringify(input), maxInFlight, now: clock.now() });

  const charges = async () => (await store.billing.ledger(account)).filter((l) => l.reason === 'charge');

  it('runs a 5-step workflow (lookup, condition, transform, delay, webhook): one charge, one signed delivery, the delay holding no worker', async () => {
    const webhookId = await subscribe(store, account, ['lookup.completed']);
    await createWorkflow(FIVE_STEPS(webhookId));
    await start('run1');
    const driver = new WorkflowRunDriver(deps(), 'a');

    expect(await drain(driver)).toBe(1);
    let run = (await store.workflows.run(account, 'run1'))!;
    // Waiting on the delay: released (no lease), its wake time stored, three steps done.
    expect(run).toMatchObject({ status: 'running', cursor: 3, stepsCompleted: 3, stepsTotal: 5, creditsUsed: 1, wakeAt: NOW + 60_000 });
    expect(await driver.tick()).toBe(false);

    clock.advance(60_000);
    expect(await drain(driver)).toBe(1);
    run = (await store.workflows.run(account, 'run1'))!;
    expect(run).toMatchObject({ status: 'completed', cursor: 5, stepsCompleted: 5, creditsUsed: 1, completedAt: NOW + 60_000 });
    expect(JSON.parse(run.outputs)).toMatchObject({ lookup1: { gender: 'female' }, is_female: { result: true }, shape: { who: 'ann@example.com', gender: 'female' } });
    expect(provider.calls).toBe(1);
    expect((await charges()).map((c) => c.id)).toEqual([stepLedgerId(account, 'run1', 'lookup1')]);
    expect((await store.billing.requireAccount(account)).credits).toBe(9);

    const deliveries = await store.deliveries.list(webhookId, 10);
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({ messageId: stepMessageId('run1', 'notify'), eventType: 'workflow.step', status: 'pending' });
    expect(deliveries[0]!.payload).toMatchObject({ data: { run_id: 'run1', step_id: 'notify', body: { who: 'ann@example.com', gender: 'female' } } });

    const { logs, total } = await store.workflows.logs(account, 'run1', { limit: 100, offset: 0 });
    expect(total).toBe(logs.length);
    expect(logs.map((l) => l.stepId)).toEqual(['lookup1', 'is_female', 'shape', 'wait', 'wait', 'notify', null]);
    expect(JSON.parse(logs[0]!.metadata)).toMatchObject({ type: 'email_lookup', credits: 1 });
  });

  it('a crash between a lookup and its commit repeats the provider call, never the charge', async () => {
    await createWorkflow([{ id: 'lookup1', type: 'email_lookup', config: { input: { var: 'input.email' } } }]);
    await start('run1');
    // The first process dies after the provider answered, before its commit reached the store.
    const dying = { ...store.workflows, commitStep: async () => Promise.reject(new Error('killed before the commit')) };
    const crashed = new WorkflowRunDriver(deps({ store: { ...store, workflows: Object.assign(Object.create(store.workflows), dying) } }), 'a');
    expect(await crashed.tick()).toBe(true);
    expect(provider.calls).toBe(1);
    expect(await charges()).toEqual([]);

    // Its lease runs out; another process takes the run and executes the step again.
    const other = new WorkflowRunDriver(deps(), 'b');
    expect(await other.tick()).toBe(false);
    clock.advance(LEASE_MS);
    expect(await drain(other)).toBe(1);
    expect(provider.calls).toBe(2);
    expect(await charges()).toHaveLength(1);
    expect(await store.workflows.run(account, 'run1')).toMatchObject({ status: 'completed', creditsUsed: 1 });
  });

  it('a commit from a process that lost its lease writes nothing, its charge included', async () => {
    await createWorkflow([{ id: 'lookup1', type: 'email_lookup', config: { input: { var: 'input.email' } } }]);
    await start('run1');
    const first = (await store.workflows.claimRun('a', NOW, LEASE_MS))!;
    const second = (await store.workflows.claimRun('b', NOW + LEASE_MS, LEASE_MS))!;
    expect(second.lease.epoch).toBe(first.lease.epoch + 1);
    const commit = (lease: typeof first.lease) => ({
      runId: 'run1',
      accountId: account,
      lease,
      cursor: 0,
      next: { cursor: 1, status: 'completed' as const, attempts: 0, wakeAt: null, outputs: '{"lookup1":{}}', stepsCompleted: 1 },
      charge: { ledgerId: stepLedgerId(account, 'run1', 'lookup1'), amount: 1, kind: 'gender' },
      logs: [],
      leaseUntil: 0,
      now: NOW + LEASE_MS,
    });
    expect(await store.workflows.commitStep(commit(first.lease))).toBe('lease_lost');
    expect(await charges()).toEqual([]);
    expect(await store.workflows.commitStep(commit(second.lease))).toBe('committed');
    expect(await store.workflows.commitStep(commit(second.lease))).toBe('lease_lost');
    expect(await charges()).toHaveLength(1);
    expect((await store.billing.requireAccount(account)).credits).toBe(9);
  });

  it('two processes claiming at once take a run once; a run waiting on a delay cannot be renewed by the process that let it go', async () => {
    await createWorkflow([{ id: 'wait', type: 'delay', config: { seconds: 30 } }]);
    await start('run1');
    const [a, b] = await Promise.all([opened.openPeer(), opened.openPeer()]);
    const claims = (await Promise.all([a.workflows.claimRun('a', NOW, LEASE_MS), b.workflows.claimRun('b', NOW, LEASE_MS)])).filter((c) => c !== undefined);
    expect(claims).toHaveLength(1);
    const [claim] = claims;
    const wait = { runId: 'run1', accountId: account, lease: claim!.lease, cursor: 0, next: { cursor: 0, status: 'running' as const, attempts: 0, wakeAt: NOW + 30_000, stepsCompleted: 0 }, logs: [], leaseUntil: NOW + 30_000, now: NOW };
    expect(await store.workflows.commitStep(wait)).toBe('committed');
    // A heartbeat landing after the wait commit: the lease was given up, so it renews nothing.
    expect(await store.workflows.renewLease('run1', claim!.lease, NOW + LEASE_MS)).toBe(false);
    expect(await store.workflows.claimRun('c', NOW + 29_999, LEASE_MS)).toBeUndefined();
    expect((await store.workflows.claimRun('c', NOW + 30_000, LEASE_MS))?.run).toMatchObject({ id: 'run1', wakeAt: NOW + 30_000 });
  });

  it('a definition edited while a run is in flight: the run finishes on its version, a new run takes the new one', async () => {
    const v1 = [
      { id: 'wait', type: 'delay', config: { seconds: 5 } },
      { id: 'say', type: 'transform', config: { expression: 'version one' } },
    ];
    await createWorkflow(v1);
    await start('old');
    const driver = new WorkflowRunDriver(deps(), 'a');
    await drain(driver);
    const v2 = validateDefinition({ name: 'Flow v2', steps: [{ id: 'say', type: 'transform', config: { expression: 'version two' } }] });
    const updated = await store.workflows.update(account, 'wf1', { name: v2.name, description: '', status: 'active', trigger: JSON.stringify(v2.trigger), steps: JSON.stringify(v2.steps), nextRunAt: null }, NOW + 1);
    expect(updated).toMatchObject({ version: 2, name: 'Flow v2' });
    await start('new');
    clock.advance(5_000);
    await drain(driver);
    const old = (await store.workflows.run(account, 'old'))!;
    const fresh = (await store.workflows.run(account, 'new'))!;
    expect(old).toMatchObject({ status: 'completed', workflowVersion: 1, stepsTotal: 2, workflowName: 'Flow' });
    expect(JSON.parse(old.outputs)).toEqual({ wait: expect.any(Object), say: 'version one' });
    expect(fresh).toMatchObject({ status: 'completed', workflowVersion: 2, stepsTotal: 1, workflowName: 'Flow v2' });
    expect(JSON.parse(fresh.outputs)).toEqual({ say: 'version two' });
  });

  it('an expression built to run forever is cut off: the step fails with expression_budget_exceeded', async () => {
    const forever = { map: [{ range: [0, 10_000] }, { map: [{ range: [0, 10_000] }, { map: [{ range: [0, 10_000] }, { '+': [1, 1] }] }] }] };
    await createWorkflow([{ id: 'spin', type: 'transform', config: { expression: forever } }]);
    await start('run1');
    const began = performance.now();
    await drain(new WorkflowRunDriver(deps(), 'a'));
    expect(performance.now() - began).toBeLessThan(2_000);
    expect(await store.workflows.run(account, 'run1')).toMatchObject({ status: 'failed', errorCode: 'expression_budget_exceeded', failedStep: 'spin' });
  });

  it('a failed lookup fails the run at its step, uncharged; a redrive goes on from there without redoing or recharging earlier steps', async () => {
    await createWorkflow([
      { id: 'first', type: 'email_lookup', config: { input: { var: 'input.email' } } },
      { id: 'second', type: 'email_lookup', config: { input: { var: 'input.other' } } },
    ]);
    provider.answer = (key) => (key === 'bob@example.com' ? { ok: false, retryable: false, code: 'lookup_failed', message: 'no answer' } : { ok: true, result: { gender: 'male' } });
    await start('run1', { email: 'ann@example.com', other: 'bob@example.com' });
    const driver = new WorkflowRunDriver(deps(), 'a');
    await drain(driver);
    expect(await store.workflows.run(account, 'run1')).toMatchObject({ status: 'failed', failedStep: 'second', errorCode: 'lookup_failed', cursor: 1, stepsCompleted: 1, creditsUsed: 1 });
    expect(await charges()).toHaveLength(1);

    provider.answer = () => ({ ok: true, result: { gender: 'male' } });
    await store.workflows.redrive(account, 'run1', NOW + 1);
    await expect(store.workflows.redrive(account, 'run1', NOW + 1)).rejects.toMatchObject({ code: 'invalid_state' });
    await drain(driver);
    expect(await store.workflows.run(account, 'run1')).toMatchObject({ status: 'completed', stepsCompleted: 2, creditsUsed: 2, errorCode: null });
    expect(provider.calls).toBe(3);
    expect((await charges()).map((c) => c.id).sort()).toEqual([stepLedgerId(account, 'run1', 'first'), stepLedgerId(account, 'run1', 'second')].sort());
  });

  it('a retryable failure waits and tries again, up to its attempts; bad input and an empty balance fail at once without calling the provider', async () => {
    await createWorkflow([{ id: 'lookup1', type: 'email_lookup', config: { input: { var: 'input.email' } } }]);
    provider.answer = () => ({ ok: false, retryable: true, code: 'provider_unavailable', message: 'down' });
    await start('flaky');
    const driver = new WorkflowRunDriver(deps({ maxAttempts: 2 }), 'a');
    await drain(driver);
    expect(await store.workflows.run(account, 'flaky')).toMatchObject({ status: 'running', attempts: 1, wakeAt: NOW + 1000 });
    clock.advance(1000);
    await drain(driver);
    expect(await store.workflows.run(account, 'flaky')).toMatchObject({ status: 'failed', errorCode: 'provider_unavailable', failedStep: 'lookup1' });
    const calls = provider.calls;

    await start('bad', { email: 'not an address' });
    await drain(driver);
    expect(await store.workflows.run(account, 'bad')).toMatchObject({ status: 'failed', errorCode: 'invalid_email' });

    const poor = (await newAccount(store, 0)).id;
    await store.workflows.create({ id: 'wf_poor', accountId: poor, name: 'p', description: '', status: 'active', trigger: '{"type":"manual"}', steps: JSON.stringify([{ id: 'l', type: 'email_lookup', config: { input: 'ann@example.com' } }]), nextRunAt: null, now: NOW });
    await store.workflows.startRun({ id: 'poor', accountId: poor, workflowId: 'wf_poor', input: '{}', maxInFlight: 10, now: clock.now() });
    await drain(driver);
    expect(await store.workflows.run(poor, 'poor')).toMatchObject({ status: 'failed', errorCode: 'insufficient_credits' });
    expect(provider.calls).toBe(calls);
    expect(await charges()).toEqual([]);
  });

  it('cancels a waiting run; the runs-in-flight limit is counted from the store; a paused workflow does not run', async () => {
    await createWorkflow([{ id: 'wait', type: 'delay', config: { seconds: 600 } }]);
    await start('run1', {}, 'wf1', 2);
    await start('run2', {}, 'wf1', 2);
    await expect(start('run3', {}, 'wf1', 2)).rejects.toMatchObject({ code: 'too_many_runs', statusCode: 429 });
    const driver = new WorkflowRunDriver(deps(), 'a');
    await drain(driver);
    expect(await store.workflows.cancel(account, 'run1', NOW + 5)).toMatchObject({ status: 'cancelled', completedAt: NOW + 5 });
    await expect(store.workflows.cancel(account, 'run1', NOW + 5)).rejects.toMatchObject({ code: 'invalid_state' });
    clock.advance(600_000);
    await drain(driver);
    expect(await store.workflows.run(account, 'run1')).toMatchObject({ status: 'cancelled', cursor: 0 });
    expect(await store.workflows.run(account, 'run2')).toMatchObject({ status: 'completed' });
    await start('run3', {}, 'wf1', 2);

    await createWorkflow([{ id: 't', type: 'transform', config: { expression: 1 } }], 'wf_paused', 'paused');
    await expect(start('run4', {}, 'wf_paused')).rejects.toMatchObject({ code: 'invalid_state', statusCode: 409 });
    await expect(store.workflows.cancel('someone-else', 'run3', NOW)).rejects.toMatchObject({ code: 'workflow_run_not_found' });
  });

  it('a webhook step naming a webhook that is not the account\'s fails with workflow_webhook_not_found', async () => {
    const other = (await newAccount(store, 1)).id;
    const theirs = await subscribe(store, other, ['lookup.completed']);
    await createWorkflow([{ id: 'notify', type: 'webhook', config: { webhook_id: theirs } }]);
    await start('run1');
    await drain(new WorkflowRunDriver(deps(), 'a'));
    expect(await store.workflows.run(account, 'run1')).toMatchObject({ status: 'failed', errorCode: 'workflow_webhook_not_found' });
    expect(await store.deliveries.list(theirs, 10)).toEqual([]);
  });

  it('a condition that is false stops the run, or skips forward to the step it names', async () => {
    await createWorkflow([
      { id: 'check', type: 'condition', config: { expression: { '>': [{ var: 'input.n' }, 10] }, on_false: 'small' } },
      { id: 'big', type: 'transform', config: { expression: 'big' } },
      { id: 'small', type: 'transform', config: { expression: { cat: ['n=', { var: 'input.n' }] } } },
      { id: 'stop', type: 'condition', config: { expression: false } },
      { id: 'never', type: 'transform', config: { expression: 'never' } },
    ]);
    await start('run1', { n: 3 });
    await drain(new WorkflowRunDriver(deps(), 'a'));
    const run = (await store.workflows.run(account, 'run1'))!;
    expect(run).toMatchObject({ status: 'completed', stepsCompleted: 3 });
    expect(JSON.parse(run.outputs)).toEqual({ check: { result: false }, small: 'n=3', stop: { result: false } });
  });
});
