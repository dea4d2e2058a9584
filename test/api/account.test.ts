import { afterEach, describe, expect, it } from 'vitest';
import { addKey, bearer, closeHarnesses, openStoreHarness, json, newAccount, runUntilDone, uploadCsv, type ApiHarness } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';
import type { StoreKind } from '../../src/storage/store.js';

const CSV = 'email\nanna.schmidt@example.com\njohn.smith@example.org\nnot-an-email\n';
afterEach(closeHarnesses);

const harness = (store: StoreKind): Promise<ApiHarness> => openStoreHarness(store);

async function account(h: ApiHarness, key: string) {
  const response = await h.app.inject({ method: 'GET', url: '/api/account', headers: bearer(key) });
  expect(response.statusCode, response.body).toBe(200);
  return { body: json(response), headers: response.headers };
}

describe.each(TEST_STORES)('GET /api/account on %s', (store) => {
  it('gives the balance, what a running job holds of it and what is left, before, during and after the job', async () => {
    const h = await harness(store);
    const caller = await newAccount(h, { credits: 100 });
    expect((await account(h, caller.key)).body).toMatchObject({ id: caller.id, status: 'active', credits: 100, reserved: 0, available: 100 });

    const jobId = json(await uploadCsv(h, caller.key, CSV)).id as string;
    // A chunk of the running job sets credits aside, as a worker does before its lookups.
    await h.engine.deps.jobs.transition(jobId, 'running', { now: Date.now() });
    expect(await h.engine.deps.billing.reserve(caller.id, jobId, 0, 30)).toBe(30);
    expect((await account(h, caller.key)).body).toMatchObject({ credits: 100, reserved: 30, available: 70 });
    // Readonly keys may read it.
    const readonly = await addKey(h, caller.id, 'readonly', 'reader');
    expect((await account(h, readonly.key)).body).toMatchObject({ credits: 100, reserved: 30, available: 70 });

    // The job ends (here: pauses, then runs to completion): what it held comes back, what it spent is gone.
    await h.engine.deps.jobs.transition(jobId, 'paused', { reason: 'paused_by_operator', now: Date.now() });
    expect((await account(h, caller.key)).body).toMatchObject({ credits: 100, reserved: 0, available: 100 });
    await h.engine.deps.jobs.transition(jobId, 'running', { now: Date.now() });
    await runUntilDone(h, [jobId]);
    const spent = (await h.engine.deps.jobs.require(jobId)).creditsUsed;
    expect(spent).toBe(2);
    expect((await account(h, caller.key)).body).toMatchObject({ credits: 98, reserved: 0, available: 98 });
  });

  it("gives the account's rate limit and what is left of the current window, as the headers do", async () => {
    const h = await harness(store);
    const caller = await newAccount(h, { credits: 5 });
    await h.engine.deps.billing.setRateLimit(caller.id, 7);
    const first = await account(h, caller.key);
    expect(first.body.rate_limit).toEqual({ per_minute: 7, remaining: 6, reset_at: Number(first.headers['x-ratelimit-reset']) });
    expect(first.headers['x-ratelimit-remaining']).toBe('6');
    const second = await account(h, caller.key);
    expect(second.body.rate_limit).toMatchObject({ per_minute: 7, remaining: 5 });
    // Another account's numbers are its own.
    const other = await newAccount(h, { credits: 40 });
    expect((await account(h, other.key)).body).toMatchObject({ id: other.id, credits: 40, available: 40, rate_limit: { remaining: h.deps.settings.rateLimitPerMinute - 1 } });
  });

  it('is refused without a valid key', async () => {
    const h = await harness(store);
    const response = await h.app.inject({ method: 'GET', url: '/api/account', headers: bearer('sk_live_nope') });
    expect(response.statusCode).toBe(401);
    expect(json(response)).toEqual({ error: 'Unauthorized' });
  });
});
