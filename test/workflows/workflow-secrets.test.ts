import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/shared/logger.js';
import { STORE_KINDS } from '../../src/storage/store.js';
import { webhookSender } from '../../src/webhooks/webhooks.js';
import { WorkflowRunDriver, workflowDriverDeps } from '../../src/workflows/run-driver.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness, type ApiHarness } from '../support/api-harness.js';
import { bytesUnder, dumpPostgres, recoverSealed } from '../support/forensic-scan.js';
import { storeEnv, TEST_SEAL_KEY, TEST_STORES } from '../support/test-engine.js';
import { startReceiver, verifyDelivery } from '../support/webhook-receiver.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await closeHarnesses();
  for (const c of cleanups.splice(0)) await c();
});

/** Distinct, long values: a hit in any byte scan can only be the secret itself. */
const LIVE = 'live-token-7f3c9a1e5b2d4c8f0a6e';
const REPLACED = 'replaced-token-2b8e4f6a0c1d3e5f7a';
const DELETED = 'deleted-token-9c1e3a5b7d0f2e4a6c';

/** Every log line a driver and a sender write, at every level, as text. */
function capturedLog() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { log: createLogger('trace', sink), lines };
}

describe.each(TEST_STORES)('workflow secrets on %s', (kind) => {
  function sealKeyOf(h: ApiHarness): Buffer {
    return Buffer.from(kind === STORE_KINDS.sqlite ? fs.readFileSync(path.join(h.engine.dataDir, 'seal.key'), 'utf8') : TEST_SEAL_KEY, 'base64');
  }

  it('are set, listed without values and deleted; a webhook step sends one in a header; no response, log line, run output or stored byte gives back a replaced or deleted value', async () => {
    const r = await startReceiver({});
    cleanups.push(() => r.close());
    const { env, drop } = await storeEnv(kind);
    cleanups.push(drop);
    const h = await openApiHarness({ ...env, SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true', SLUICE_WEBHOOK_TIMEOUT_MS: '2000' }, undefined, { webhookCa: r.ca });
    const { key, id: accountId } = await newAccount(h, { credits: 10 });
    const other = await newAccount(h, { credits: 10 });
    const responses: string[] = [];
    const call = async (method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, payload?: unknown, as = key) => {
      const res = await h.app.inject({ method, url, headers: bearer(as), ...(payload === undefined ? {} : { payload: payload as object }) });
      responses.push(res.body);
      return res;
    };

    // Create, replace, create another; the answers name the secret and its times, never a value.
    const first = await call('PUT', '/api/workflow-secrets/API_TOKEN', { value: REPLACED });
    expect(first.statusCode, first.body).toBe(201);
    expect(Object.keys(json(first)).sort()).toEqual(['created_at', 'name', 'updated_at']);
    const replaced = await call('PUT', '/api/workflow-secrets/API_TOKEN', { value: LIVE });
    expect(replaced.statusCode, replaced.body).toBe(200);
    expect((await call('PUT', '/api/workflow-secrets/OLD_TOKEN', { value: DELETED })).statusCode).toBe(201);
    const listed = json(await call('GET', '/api/workflow-secrets'));
    expect(listed.secrets.map((s: { name: string }) => s.name)).toEqual(['API_TOKEN', 'OLD_TOKEN']);
    expect(json(await call('GET', '/api/workflow-secrets', undefined, other.key))).toEqual({ secrets: [] });
    // Another account cannot delete it (404, as for a name that does not exist).
    expect((await call('DELETE', '/api/workflow-secrets/API_TOKEN', undefined, other.key)).statusCode).toBe(404);

    const created = await call('POST', '/api/webhooks', { url: r.url, events: ['lookup.completed'] });
    const hook = json(created).result as { id: string; signing_secret: string };
    const steps = (headers: Record<string, string>) => [{ id: 'notify', type: 'webhook', config: { webhook_id: hook.id, body: { var: 'input' }, headers } }];
    // A reference to a secret the account does not have is refused at save, by name.
    const unknown = await call('POST', '/api/workflows', { name: 'notify', steps: steps({ authorization: 'Bearer {{secrets.NOPE}}' }) });
    expect(unknown.statusCode).toBe(422);
    expect(json(unknown)).toMatchObject({ code: 'unknown_workflow_secret', error: 'step notify: the account has no secret NOPE' });
    // Another account's secret is as unknown as none.
    const elsewhere = await call('POST', '/api/workflows', { name: 'notify', steps: steps({ authorization: 'Bearer {{secrets.API_TOKEN}}' }) }, other.key);
    expect(elsewhere.statusCode).toBe(422);

    const wf = await call('POST', '/api/workflows', { name: 'notify', steps: steps({ authorization: 'Bearer {{secrets.API_TOKEN}}', 'x-tenant': 'acme' }) });
    expect(wf.statusCode, wf.body).toBe(201);
    const run = json(await call('POST', `/api/workflows/${json(wf).id}/run`, { input: { email: 'maria@example.com' } }));
    const { log, lines } = capturedLog();
    const driver = new WorkflowRunDriver({ ...workflowDriverDeps(h.engine.deps), log }, 'w');
    while (await driver.tick());
    const sender = webhookSender(h.engine.webhooks, h.engine.deps.clock, log, { pollMs: 20 });
    expect(await sender.tick()).toBe(1);
    const [request] = await r.waitFor(1);
    expect(request!.headers.authorization).toBe(`Bearer ${LIVE}`);
    expect(request!.headers['x-tenant']).toBe('acme');
    expect(verifyDelivery(request!, hook.signing_secret)).toEqual([]);
    expect(request!.rawBody.toString('utf8')).not.toContain(LIVE);

    // Delete one; a second delete is 404.
    expect((await call('DELETE', '/api/workflow-secrets/OLD_TOKEN')).statusCode).toBe(200);
    expect((await call('DELETE', '/api/workflow-secrets/OLD_TOKEN')).statusCode).toBe(404);
    expect(json(await call('GET', '/api/workflow-secrets')).secrets.map((s: { name: string }) => s.name)).toEqual(['API_TOKEN']);
    // Each change is in the audit log, by name.
    const audit = json(await call('GET', '/api/account/audit'));
    const secretEntries = (audit.entries as { action: string; target_id: string }[]).filter((e) => e.action.startsWith('workflow_secret.')).map((e) => `${e.action} ${e.target_id}`);
    expect(secretEntries).toEqual(['workflow_secret.deleted OLD_TOKEN', 'workflow_secret.set OLD_TOKEN', 'workflow_secret.set API_TOKEN', 'workflow_secret.set API_TOKEN']);

    // Nothing Sluice answered or logged holds any value, and the run's outputs and log do not either.
    await call('GET', `/api/workflow-runs/${run.id}`);
    await call('GET', `/api/workflows/logs?run_id=${run.id}`);
    await call('GET', `/api/workflows/${json(wf).id}`);
    await call('GET', `/api/webhooks/deliveries?webhook_id=${hook.id}`);
    const stored = await h.engine.deps.store.workflows.run(accountId, run.id);
    expect(stored).toMatchObject({ status: 'completed' });
    expect(lines.length).toBeGreaterThan(0);
    const seen = [...responses, ...lines, JSON.stringify(stored)].join('\n');
    for (const value of [LIVE, REPLACED, DELETED]) expect(seen).not.toContain(value);

    // The bytes: the live value is there, sealed (the control: the scan finds what exists); the
    // replaced and deleted ones open to nothing, even with the seal key.
    const sealKey = sealKeyOf(h);
    const expectErased = (bytes: string) => {
      const recovered = recoverSealed(bytes, sealKey);
      expect(recovered.has(LIVE), 'the control: the live secret is found').toBe(true);
      for (const value of [REPLACED, DELETED]) {
        expect(recovered.has(value), 'an erased secret was opened').toBe(false);
        expect(bytes.includes(value), 'an erased secret lies in plain text').toBe(false);
      }
      expect(bytes.includes(LIVE), 'the live secret lies in plain text').toBe(false);
    };
    if (kind === STORE_KINDS.sqlite) expectErased(bytesUnder(h.engine.dataDir));
    else expectErased(await dumpPostgres(h.engine.env.SLUICE_DATABASE_URL!));
    await closeHarnesses();
    if (kind === STORE_KINDS.sqlite) expectErased(bytesUnder(h.engine.dataDir));
  });
});
