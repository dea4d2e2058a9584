import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { bearer, closeHarnesses, json, newAccount, openStoreHarness, uploadCsv } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';

/**
 * Issue 33: resume accepted jobs that could not progress (paused at balance 0, failed on a file
 * with no key column) and then sent the same `bulk.paused` or `bulk.failed` again. Refused now,
 * with the reason and what to do, and nothing changes on the job.
 */
afterEach(closeHarnesses);

describe.each(TEST_STORES)('resume refuses a job that cannot progress, on %s', (kind) => {
  it('a job paused out of credits while the account has none: 402 saying to top up; the top-up then resumes it', async () => {
    const h = await openStoreHarness(kind);
    const caller = await newAccount(h, { credits: 5 });
    const id = json(await uploadCsv(h, caller.key, 'email\nanna.schmidt@example.com\n')).id;
    await h.engine.deps.jobs.transition(id, 'paused', { reason: 'insufficient_credits', now: Date.now() });
    // Spent elsewhere (a single lookup, say): the account has nothing left.
    await h.engine.deps.billing.commitLookup({ accountId: caller.id, kind: 'company', charge: { type: 'flat', amount: 5, callId: randomUUID() }, cache: [], now: Date.now() });

    const refused = await h.app.inject({ method: 'POST', url: `/api/jobs/${id}/resume`, headers: bearer(caller.key) });
    expect(refused.statusCode, refused.body).toBe(402);
    expect(json(refused)).toEqual({
      code: 'insufficient_credits',
      error: `Job ${id} cannot be resumed yet: it paused because the account ran out of credits, and it has none available; top up the account (GET /api/account shows what is available), then resume it`,
    });
    expect(await h.engine.deps.jobs.status(id)).toBe('paused');

    // What the refusal says to do works: a top-up takes the job out of its pause.
    await h.engine.deps.billing.addCredits(caller.id, 10, 'topup', Date.now());
    expect(await h.engine.deps.jobs.status(id)).not.toBe('paused');
  });

  it('a job that failed on its file (no_key_column): 409 saying to name the column in a new job; the job stays failed', async () => {
    const h = await openStoreHarness(kind);
    const caller = await newAccount(h);
    const id = json(await uploadCsv(h, caller.key, 'email\nanna.schmidt@example.com\n')).id;
    await h.engine.deps.jobs.transition(id, 'failed', { reason: 'no_key_column', now: Date.now() });
    const refused = await h.app.inject({ method: 'POST', url: `/api/jobs/${id}/resume`, headers: bearer(caller.key) });
    expect(refused.statusCode, refused.body).toBe(409);
    expect(json(refused).code).toBe('invalid_state');
    expect(json(refused).error).toMatch(new RegExp(`^Job ${id} cannot be resumed: it failed on its file \\(no_key_column.*\\), which would fail the same way again; name the column that holds the keys in the \`column\` field and submit it as a new job$`));
    expect(await h.engine.deps.jobs.status(id)).toBe('failed');
  });
});
