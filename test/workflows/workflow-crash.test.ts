import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { exited, startWorker, waitFor } from '../support/child-worker.js';
import { engineScope, TEST_STORES } from '../support/test-engine.js';
import { subscribe } from '../support/test-store.js';
import { validateDefinition } from '../../src/workflows/definition.js';
import { stepLedgerId } from '../../src/workflows/step-executor.js';

const ENV = { SLUICE_LEASE_SECONDS: '2', SLUICE_POLL_MS: '20', SLUICE_WORKFLOW_RUNS_IN_FLIGHT: '100000' };
/** The 1,000 (bench/RESULTS.md has its time on both stores); WORKFLOW_CRASH_RUNS=N for a quicker look. */
const RUNS = Number(process.env.WORKFLOW_CRASH_RUNS ?? 1000);
/** Each key is looked up by two runs: the repeat-free rule charges it once, crashes or not. */
const KEYS = Math.ceil(RUNS / 2);
const ACCOUNT = 'acc';

describe.each(TEST_STORES)('workflow runs under kill -9 of their workers, on %s', (store) => {
  const engines = engineScope(store);
  const children: ChildProcess[] = [];
  afterEach(async () => {
    const left = children.splice(0);
    for (const child of left) child.kill('SIGKILL');
    await Promise.all(left.map(exited));
    await engines.closeAll();
  });

  it(`${RUNS} runs of a 5-step workflow (lookup, transform, delay, webhook, transform): every run completes, one charge per key (each looked up twice), one delivery per webhook step`, async () => {
    const e = await engines.open(ENV);
    const { store: s } = e.deps;
    await e.deps.billing.createAccount({ id: ACCOUNT, credits: 10_000, now: Date.now() });
    // No SLUICE_WEBHOOK_ALLOW_PRIVATE: the sender refuses the loopback address without connecting.
    const hook = await subscribe(s, ACCOUNT, ['lookup.completed'], { url: 'https://127.0.0.1:9/in' });
    const def = validateDefinition({
      name: 'crash',
      steps: [
        { id: 'lookup1', type: 'email_lookup', config: { input: { var: 'input.email' } } },
        { id: 'shape', type: 'transform', config: { expression: { object: { g: { var: 'steps.lookup1.output.gender' } } } } },
        { id: 'wait', type: 'delay', config: { seconds: 1 } },
        { id: 'notify', type: 'webhook', config: { webhook_id: hook, body: { var: 'steps.shape.output' } } },
        { id: 'done', type: 'transform', config: { expression: { cat: ['sent ', { var: 'steps.notify.output.message_id' }] } } },
      ],
    });
    await s.workflows.create({ id: 'wf', accountId: ACCOUNT, name: def.name, description: '', status: 'active', trigger: JSON.stringify(def.trigger), steps: JSON.stringify(def.steps), nextRunAt: null, now: Date.now() });
    const names = ['maria', 'john', 'anna', 'peter', 'laura', 'mike'];
    const emailOf = (i: number) => `${names[(i % KEYS) % names.length]}.${i % KEYS}@example.com`;
    for (let i = 0; i < RUNS; i++) {
      await s.workflows.startRun({ id: `run${i}`, accountId: ACCOUNT, workflowId: 'wf', input: JSON.stringify({ email: emailOf(i) }), maxInFlight: 100_000, now: Date.now() });
    }
    const completed = async () => (await s.workflows.runs(ACCOUNT, { limit: RUNS, offset: 0 })).runs.filter((r) => r.status === 'completed').length;

    let kills = 0;
    for (let round = 0; round < 4; round++) {
      const child = startWorker(e.env);
      children.push(child);
      const target = (await completed()) + 20 + Math.floor(Math.random() * 40);
      await waitFor(async () => (await completed()) >= target, 60_000, 10);
      child.kill('SIGKILL');
      await exited(child);
      if ((await completed()) < RUNS) kills++;
    }
    const last = startWorker(e.env);
    children.push(last);
    expect(await waitFor(async () => (await completed()) === RUNS, Math.max(120_000, RUNS * 300), 50)).toBe(true);
    last.kill('SIGTERM');
    await exited(last);
    expect(kills).toBeGreaterThanOrEqual(3);

    const { runs } = await s.workflows.runs(ACCOUNT, { limit: RUNS, offset: 0 });
    expect(runs.every((r) => r.stepsCompleted === 5)).toBe(true);
    // Per key, exactly one of its two runs paid; the ledger holds exactly those runs' step lines.
    const payers = runs.filter((r) => r.creditsUsed === 1);
    expect(runs.filter((r) => r.creditsUsed !== 0 && r.creditsUsed !== 1)).toEqual([]);
    expect(new Set(payers.map((r) => (JSON.parse(r.input) as { email: string }).email)).size).toBe(KEYS);
    expect(payers).toHaveLength(KEYS);
    const charges = (await e.deps.billing.ledger(ACCOUNT)).filter((l) => l.reason === 'charge');
    expect(charges).toHaveLength(KEYS);
    expect(new Set(charges.map((c) => c.id))).toEqual(new Set(payers.map((r) => stepLedgerId(ACCOUNT, r.id, 'lookup1'))));
    expect((await e.deps.billing.requireAccount(ACCOUNT)).credits).toBe(10_000 - KEYS);
    const deliveries = await s.deliveries.list(hook, RUNS);
    expect(deliveries).toHaveLength(RUNS);
    expect(new Set(deliveries.map((d) => d.messageId)).size).toBe(RUNS);
  }, Math.max(400_000, RUNS * 1000));
});
