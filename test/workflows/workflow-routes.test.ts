import { afterEach, describe, expect, it } from 'vitest';
import { WorkflowRunDriver, workflowDriverDeps } from '../../src/workflows/run-driver.js';
import { addKey, bearer, closeHarnesses, json, newAccount, openStoreHarness, type ApiHarness } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';

afterEach(closeHarnesses);

const STEPS = [
  { id: 'lookup1', type: 'email_lookup', config: { input: { var: 'input.email' } } },
  { id: 'shape', type: 'transform', config: { expression: { object: { gender: { var: 'steps.lookup1.output.gender' } } } } },
];

describe.each(TEST_STORES)('workflows over the API on %s', (kind) => {
  let h: ApiHarness;
  let key: string;
  let accountId: string;

  async function setup(env: Record<string, string> = {}) {
    h = await openStoreHarness(kind, env);
    const a = await newAccount(h, { credits: 10 });
    key = a.key;
    accountId = a.id;
  }

  const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH', url: string, payload?: unknown, as = key) =>
    h.app.inject({ method, url, headers: bearer(as), ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }) });

  async function drain() {
    const driver = new WorkflowRunDriver(workflowDriverDeps(h.engine.deps), 'test-worker');
    while (await driver.tick());
  }

  it('creates, lists, updates (a new version), runs through the embedded lookup, logs and deletes a workflow', async () => {
    await setup();
    const created = await call('POST', '/api/workflows', { name: 'Enrich', description: 'd', steps: STEPS });
    expect(created.statusCode, created.body).toBe(201);
    const wf = json(created);
    expect(wf).toMatchObject({ name: 'Enrich', status: 'active', version: 1, trigger: { type: 'manual' }, steps: STEPS });

    const list = json(await call('GET', '/api/workflows?page=1&limit=10&status=active'));
    expect(list).toMatchObject({ total: 1, page: 1, workflows: [{ id: wf.id }] });

    const started = await call('POST', `/api/workflows/${wf.id}/run`, { input: { email: 'maria@example.com' } });
    expect(started.statusCode, started.body).toBe(202);
    const run = json(started);
    expect(run).toMatchObject({ workflow_id: wf.id, workflow_version: 1, status: 'queued', steps_total: 2, steps_completed: 0, credits_used: 0 });

    const updated = await call('PUT', `/api/workflows/${wf.id}`, { name: 'Enrich v2', steps: [STEPS[0]] });
    expect(json(updated)).toMatchObject({ version: 2, name: 'Enrich v2' });

    await drain();
    const done = json(await call('GET', `/api/workflow-runs/${run.id}`));
    expect(done).toMatchObject({ status: 'completed', steps_completed: 2, credits_used: 1, workflow_version: 1, error: null });
    expect(done.duration_ms).toBeGreaterThanOrEqual(0);

    const runs = json(await call('GET', `/api/workflows/runs?page=1&limit=20&workflow_id=${wf.id}`));
    expect(runs).toMatchObject({ total: 1, page: 1, runs: [{ id: run.id, workflow_name: 'Enrich' }] });

    const logs = json(await call('GET', `/api/workflows/logs?run_id=${run.id}&limit=2&offset=0`));
    expect(logs).toMatchObject({ total: 3, limit: 2, offset: 0 });
    expect(logs.logs).toHaveLength(2);
    expect(typeof logs.logs[0].metadata).toBe('string');
    expect(JSON.parse(logs.logs[0].metadata)).toMatchObject({ type: 'email_lookup', credits: 1 });

    expect((await call('DELETE', `/api/workflows/${wf.id}`)).statusCode).toBe(200);
    expect((await call('DELETE', `/api/workflows/${wf.id}`)).statusCode).toBe(404);
    expect((await call('GET', `/api/workflows/${wf.id}`)).statusCode).toBe(404);
    expect(json(await call('GET', `/api/workflow-runs/${run.id}`))).toMatchObject({ status: 'completed' });
    expect((await h.engine.deps.billing.requireAccount(accountId)).credits).toBe(9);
    const audit = json(await call('GET', '/api/account/audit'));
    const entries = audit.entries as { action: string }[];
    expect(entries.filter((e) => e.action.startsWith('workflow.')).map((e) => e.action)).toEqual(['workflow.deleted', 'workflow.updated', 'workflow.created']);
  });

  it('answers the spec\'s errors: logs without run_id 400, another method 405, limit over 100 422, another account 404, a read-only key 403', async () => {
    await setup();
    expect((await call('GET', '/api/workflows/logs')).statusCode).toBe(400);
    expect(json(await call('GET', '/api/workflows/logs'))).toMatchObject({ error: 'run_id is required' });
    expect((await call('POST', '/api/workflows/logs', {})).statusCode).toBe(405);
    expect((await call('GET', '/api/workflows/logs?run_id=x&limit=101')).statusCode).toBe(422);
    expect((await call('GET', '/api/workflows/logs?run_id=nope')).statusCode).toBe(404);

    const wf = json(await call('POST', '/api/workflows', { name: 'w', steps: STEPS }));
    const other = await newAccount(h);
    expect((await call('GET', `/api/workflows/${wf.id}`, undefined, other.key)).statusCode).toBe(404);
    expect((await call('POST', `/api/workflows/${wf.id}/run`, {}, other.key)).statusCode).toBe(404);
    const readonly = await addKey(h, accountId, 'readonly');
    expect((await call('POST', `/api/workflows/${wf.id}/run`, {}, readonly.key)).statusCode).toBe(403);
    expect((await call('GET', `/api/workflows/${wf.id}`, undefined, readonly.key)).statusCode).toBe(200);
  });

  it('refuses bad definitions at save with their codes, and nothing is stored', async () => {
    await setup();
    const refused = async (steps: unknown[], code: string, extra: Record<string, unknown> = {}) => {
      const r = await call('POST', '/api/workflows', { name: 'bad', steps, ...extra });
      expect(r.statusCode, r.body).toBe(422);
      expect(json(r).code ?? json(r).error).toContain(code);
    };
    await refused([{ id: 'a', type: 'darkweb_lookup', config: {} }], 'step_type_unsupported');
    await refused([{ id: 'a', type: 'email_lookup', config: { input: { var: 'steps.b.output.x' } } }, { id: 'b', type: 'email_lookup', config: { input: 'x@y.com' } }], 'invalid_reference');
    await refused([{ id: 'a', type: 'email_lookup', config: { input: { var: 'input.__proto__.x' } } }], 'invalid_reference');
    await refused([{ id: 'a', type: 'transform', config: { expression: { eval: '1' } } }], 'invalid_expression');
    await refused([{ id: 'a', type: 'webhook', config: { webhook_id: 'wh_nope' } }], 'workflow_webhook_not_found');
    await refused([{ id: 'a', type: 'transform', config: { expression: 1 } }], 'trigger_unsupported', { trigger: { type: 'file_upload' } });
    expect(json(await call('GET', '/api/workflows'))).toMatchObject({ total: 0 });
  });

  it('cancels a waiting run and redrives a failed one; a paused workflow does not run; the in-flight limit answers 429', async () => {
    await setup({ SLUICE_WORKFLOW_RUNS_IN_FLIGHT: '2' });
    const slow = json(await call('POST', '/api/workflows', { name: 'slow', steps: [{ id: 'wait', type: 'delay', config: { seconds: 3600 } }] }));
    const a = json(await call('POST', `/api/workflows/${slow.id}/run`, {}));
    json(await call('POST', `/api/workflows/${slow.id}/run`, {}));
    const third = await call('POST', `/api/workflows/${slow.id}/run`, {});
    expect(third.statusCode).toBe(429);
    await drain();
    expect(json(await call('GET', `/api/workflow-runs/${a.id}`))).toMatchObject({ status: 'running', wake_at: expect.any(String) });
    expect(json(await call('POST', `/api/workflow-runs/${a.id}/cancel`))).toMatchObject({ status: 'cancelled' });
    expect((await call('POST', `/api/workflow-runs/${a.id}/cancel`)).statusCode).toBe(409);
    expect((await call('POST', `/api/workflow-runs/${a.id}/redrive`)).statusCode).toBe(409);

    const failing = json(await call('POST', '/api/workflows', { name: 'f', steps: [{ id: 'l', type: 'email_lookup', config: { input: { var: 'input.email' } } }] }));
    const bad = json(await call('POST', `/api/workflows/${failing.id}/run`, { input: { email: 'not-an-email' } }));
    await drain();
    expect(json(await call('GET', `/api/workflow-runs/${bad.id}`))).toMatchObject({ status: 'failed', failed_step: 'l', error: { code: 'invalid_email' } });
    expect(json(await call('POST', `/api/workflow-runs/${bad.id}/redrive`))).toMatchObject({ status: 'queued' });

    const paused = json(await call('POST', '/api/workflows', { name: 'p', status: 'paused', steps: STEPS }));
    expect((await call('POST', `/api/workflows/${paused.id}/run`, {})).statusCode).toBe(409);
  });
});
