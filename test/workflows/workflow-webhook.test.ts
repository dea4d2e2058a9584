import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/shared/logger.js';
import { webhookSender } from '../../src/webhooks/webhooks.js';
import { WorkflowRunDriver, workflowDriverDeps } from '../../src/workflows/run-driver.js';
import { stepMessageId } from '../../src/workflows/step-executor.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness } from '../support/api-harness.js';
import { storeEnv, TEST_STORES } from '../support/test-engine.js';
import { startReceiver, verifyDelivery } from '../support/webhook-receiver.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await closeHarnesses();
  for (const c of cleanups.splice(0)) await c();
});

describe.each(TEST_STORES)('a workflow webhook step on %s', (kind) => {
  it('reaches a real HTTPS receiver on loopback once, signed, with Idempotency-Key = webhook-id = a pure function of (run, step), and the secret in no output or log', async () => {
    const r = await startReceiver({});
    cleanups.push(() => r.close());
    const { env, drop } = await storeEnv(kind);
    cleanups.push(drop);
    const h = await openApiHarness({ ...env, SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true', SLUICE_WEBHOOK_TIMEOUT_MS: '2000' }, undefined, { webhookCa: r.ca });
    const { key, id: accountId } = await newAccount(h, { credits: 10 });
    const created = await h.app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(key), payload: { url: r.url, events: ['lookup.completed'] } });
    expect(created.statusCode, created.body).toBe(200);
    const hook = json(created).result as { id: string; signing_secret: string };

    const steps = [
      { id: 'lookup1', type: 'email_lookup', config: { input: { var: 'input.email' } } },
      { id: 'notify', type: 'webhook', config: { webhook_id: hook.id, body: { object: { email: { var: 'input.email' }, gender: { var: 'steps.lookup1.output.gender' } } } } },
    ];
    const wf = json(await h.app.inject({ method: 'POST', url: '/api/workflows', headers: bearer(key), payload: { name: 'notify', steps } }));
    const run = json(await h.app.inject({ method: 'POST', url: `/api/workflows/${wf.id}/run`, headers: bearer(key), payload: { input: { email: 'maria@example.com' } } }));
    const driver = new WorkflowRunDriver(workflowDriverDeps(h.engine.deps), 'w');
    while (await driver.tick());

    const sender = webhookSender(h.engine.webhooks, h.engine.deps.clock, silentLogger(), { pollMs: 20 });
    expect(await sender.tick()).toBe(1);
    const [request] = await r.waitFor(1);
    expect(verifyDelivery(request!, hook.signing_secret)).toEqual([]);
    const id = stepMessageId(run.id, 'notify');
    expect(request!.headers['webhook-id']).toBe(id);
    expect(request!.headers['idempotency-key']).toBe(id);
    expect(request!.headers['x-sluice-event']).toBe('workflow.step');
    expect(request!.json).toMatchObject({ event: 'workflow.step', data: { workflow_id: wf.id, run_id: run.id, step_id: 'notify', body: { email: 'maria@example.com', gender: expect.any(String) } } });
    expect(await sender.tick()).toBe(0);

    const stored = await h.engine.deps.store.workflows.run(accountId, run.id);
    expect(stored).toMatchObject({ status: 'completed' });
    const logs = json(await h.app.inject({ method: 'GET', url: `/api/workflows/logs?run_id=${run.id}`, headers: bearer(key) }));
    const everything = JSON.stringify([stored, logs]);
    expect(everything).not.toContain(hook.signing_secret);
    expect(everything).not.toContain(r.url);
  });
});
