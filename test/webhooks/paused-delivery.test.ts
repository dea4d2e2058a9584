import { afterEach, describe, expect, it } from 'vitest';
import { Worker } from '../../src/jobs/worker.js';
import { silentLogger } from '../../src/shared/logger.js';
import { webhookSender } from '../../src/webhooks/webhooks.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness, uploadCsv, type ApiHarness } from '../support/api-harness.js';
import { storeEnv, TEST_STORES } from '../support/test-engine.js';
import { startReceiver, verifyDelivery, type Receiver } from '../support/webhook-receiver.js';

/** Two billable addresses and one invalid row: one credit pays for the first row only. */
const CSV = 'email\nanna.schmidt@example.com\njohn.smith@example.org\nnot-an-email\n';
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  await closeHarnesses();
  for (const c of cleanups.splice(0)) await c();
});

async function webhook(h: ApiHarness, key: string, r: Receiver, events: string[]) {
  const created = await h.app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(key), payload: { url: r.url, events } });
  expect(created.statusCode, created.body).toBe(200);
  return json(created).result as { id: string; signing_secret: string };
}

/** Runs a worker until the job stops: paused or ended. */
async function runUntilStopped(h: ApiHarness, id: string): Promise<void> {
  await new Worker(h.engine.deps).run({ concurrency: 1, until: async () => !['queued', 'running'].includes((await h.engine.deps.jobs.status(id))!) });
}

describe.each(TEST_STORES)('bulk.paused delivery on %s', (store) => {
  it('announces a pause for credits, signed like bulk.completed, with the reason, the rows left and an upper bound of the credits to finish', async () => {
    const r = await startReceiver({});
    cleanups.push(() => r.close());
    const { env, drop } = await storeEnv(store);
    cleanups.push(drop);
    const h = await openApiHarness({ ...env, SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true', SLUICE_WEBHOOK_TIMEOUT_MS: '2000' }, undefined, { webhookCa: r.ca });
    const caller = await newAccount(h, { credits: 1 });
    const paused = await webhook(h, caller.key, r, ['bulk.paused']);
    const completedOnly = await webhook(h, caller.key, r, ['bulk.completed']);

    const id = json(await uploadCsv(h, caller.key, CSV)).id as string;
    await runUntilStopped(h, id);
    expect(await h.engine.deps.jobs.require(id)).toMatchObject({ status: 'paused', reason: 'insufficient_credits', processedRows: 1, creditsUsed: 1 });

    const sender = webhookSender(h.engine.webhooks, h.engine.deps.clock, silentLogger(), { pollMs: 20 });
    expect(await sender.tick()).toBe(1);
    const [request] = await r.waitFor(1);
    expect(verifyDelivery(request!, paused.signing_secret)).toEqual([]);
    expect(request!.headers['x-sluice-event']).toBe('bulk.paused');
    const body = request!.json as any;
    expect(body).toMatchObject({
      event: 'bulk.paused',
      data: { id, type: 'gender', status: 'paused', reason: 'insufficient_credits', rows: { total: 3, processed: 1 }, credits_used: 1, rows_left: 2, credits_needed_max: 2 },
    });
    expect(Date.parse(body.created_at)).not.toBeNaN();
    expect(await h.engine.webhooks.deliveries.list(completedOnly.id, 10)).toEqual([]);

    // The top-up resumes it; the job then completes, and only the bulk.completed webhook hears of that.
    await h.engine.deps.billing.addCredits(caller.id, 10, 'topup', Date.now());
    await runUntilStopped(h, id);
    expect(await h.engine.deps.jobs.require(id)).toMatchObject({ status: 'completed', creditsUsed: 2 });
    expect(await sender.tick()).toBe(1);
    const [, second] = await r.waitFor(2);
    expect(second!.headers['x-sluice-event']).toBe('bulk.completed');
    expect(await h.engine.webhooks.deliveries.list(paused.id, 10)).toHaveLength(1);
  });
});
