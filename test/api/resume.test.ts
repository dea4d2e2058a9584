import { afterEach, describe, expect, it } from 'vitest';
import { addKey, bearer, closeHarnesses, openStoreHarness, json, newAccount, runUntilDone, uploadCsv, type ApiHarness } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';
import type { StoreKind } from '../../src/storage/store.js';

const CSV = 'email\nanna.schmidt@example.com\njohn.smith@example.org\nnot-an-email\n';
afterEach(closeHarnesses);

const harness = (store: StoreKind): Promise<ApiHarness> => openStoreHarness(store);

function post(h: ApiHarness, key: string, url: string) {
  return h.app.inject({ method: 'POST', url, headers: bearer(key) });
}

async function pausedGenderJob(h: ApiHarness, key: string): Promise<string> {
  const id = json(await uploadCsv(h, key, CSV)).id as string;
  await h.engine.deps.jobs.transition(id, 'paused', { reason: 'paused_by_operator', now: Date.now() });
  return id;
}

describe.each(TEST_STORES)('resuming a job through the API on %s', (store) => {
  it('POST /api/jobs/{id}/resume runs a paused job again, and it completes', async () => {
    const h = await harness(store);
    const caller = await newAccount(h, { credits: 50 });
    const id = await pausedGenderJob(h, caller.key);
    const resumed = await post(h, caller.key, `/api/jobs/${id}/resume`);
    expect(resumed.statusCode, resumed.body).toBe(200);
    expect(json(resumed)).toMatchObject({ id, status: 'running', reason: null });
    await runUntilDone(h, [id]);
    expect(await h.engine.deps.jobs.require(id)).toMatchObject({ status: 'completed', creditsUsed: 2, processedRows: 3 });
  });

  it('POST /api/phone-jobs/resume?id= runs a paused phone job again, and it completes', async () => {
    const h = await harness(store);
    const caller = await newAccount(h, { credits: 50 });
    const created = await h.app.inject({ method: 'POST', url: '/api/phone-jobs', headers: bearer(caller.key), payload: { feature: 'breaches', numbers: ['+4915124914946', '+49 30 6094609'] } });
    expect(created.statusCode, created.body).toBe(202);
    const id = json(created).id as string;
    await h.engine.deps.jobs.transition(id, 'paused', { reason: 'paused_by_operator', now: Date.now() });
    const resumed = await post(h, caller.key, `/api/phone-jobs/resume?id=${id}`);
    expect(resumed.statusCode, resumed.body).toBe(200);
    expect(json(resumed)).toMatchObject({ id, status: 'running', reason: null, feature: 'breaches' });
    await runUntilDone(h, [id]);
    expect(await h.engine.deps.jobs.require(id)).toMatchObject({ status: 'completed', processedRows: 2 });

    // The phone route knows only phone jobs; the general one knows both.
    const gender = await pausedGenderJob(h, caller.key);
    const wrongFamily = await post(h, caller.key, `/api/phone-jobs/resume?id=${gender}`);
    expect([wrongFamily.statusCode, json(wrongFamily)]).toEqual([404, { error: 'Job not found', code: 'job_not_found' }]);
    const noId = await post(h, caller.key, '/api/phone-jobs/resume');
    expect([noId.statusCode, json(noId)]).toEqual([400, { error: 'id is required', code: 'invalid_request' }]);
  });

  it('refuses readonly keys (403), other accounts and unknown ids (404), and jobs in other states (409, saying what to do)', async () => {
    const h = await harness(store);
    const caller = await newAccount(h, { credits: 50 });
    const stranger = await newAccount(h, { credits: 50 });
    const readonly = await addKey(h, caller.id, 'readonly', 'reader');
    const id = await pausedGenderJob(h, caller.key);

    const forbidden = await post(h, readonly.key, `/api/jobs/${id}/resume`);
    expect([forbidden.statusCode, json(forbidden)]).toEqual([403, { error: 'Insufficient permissions', code: 'forbidden' }]);
    for (const url of [`/api/jobs/${id}/resume`, '/api/jobs/job_nope/resume']) {
      const missing = await post(h, stranger.key, url);
      expect([missing.statusCode, json(missing)]).toEqual([404, { error: 'Job not found', code: 'job_not_found' }]);
    }
    expect(await h.engine.deps.jobs.status(id)).toBe('paused');

    expect((await post(h, caller.key, `/api/jobs/${id}/resume`)).statusCode).toBe(200);
    const running = await post(h, caller.key, `/api/jobs/${id}/resume`);
    expect(running.statusCode).toBe(409);
    expect(json(running)).toEqual({ code: 'invalid_state', error: `Job ${id} cannot be resumed: it is running; follow it with GET /api/jobs/${id}. Paused, failed and stalled jobs can be resumed.` });
    await runUntilDone(h, [id]);
    const completed = await post(h, caller.key, `/api/jobs/${id}/resume`);
    expect([completed.statusCode, json(completed).code]).toEqual([409, 'invalid_state']);
    expect(json(completed).error).toContain('it has completed; download its results');

    const cancelled = json(await uploadCsv(h, caller.key, CSV)).id as string;
    await h.engine.deps.jobs.transition(cancelled, 'cancelled', { now: Date.now() });
    const refused = await post(h, caller.key, `/api/jobs/${cancelled}/resume`);
    expect([refused.statusCode, json(refused).code]).toEqual([409, 'invalid_state']);
    expect(json(refused).error).toContain('submit the file as a new job');
  });

  it('a deleted failed job is 410 job_deleted, not resumed and not a 500', async () => {
    const h = await harness(store);
    const caller = await newAccount(h, { credits: 50 });
    const id = json(await uploadCsv(h, caller.key, CSV)).id as string;
    await h.engine.deps.jobs.transition(id, 'failed', { reason: 'error_budget_exceeded', now: Date.now() });
    const deleted = await h.app.inject({ method: 'DELETE', url: `/api/jobs/${id}`, headers: bearer(caller.key) });
    expect(deleted.statusCode, deleted.body).toBe(200);
    const resumed = await post(h, caller.key, `/api/jobs/${id}/resume`);
    expect([resumed.statusCode, json(resumed).code]).toEqual([410, 'job_deleted']);
    expect(await h.engine.deps.jobs.status(id)).toBe('failed');
  });
});
