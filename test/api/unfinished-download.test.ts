import { afterEach, describe, expect, it } from 'vitest';
import { bearer, closeHarnesses, json, newAccount, openApiHarness, uploadCsv } from '../support/api-harness.js';

/** Issue 33: asking for an unfinished job's results says how to get the rows done so far. */
afterEach(closeHarnesses);

describe('downloading a job that has not finished', () => {
  it('the API answers 409 naming partial=true (with the filter asked for); the CLI names --partial', async () => {
    const h = await openApiHarness();
    const caller = await newAccount(h);
    const id = json(await uploadCsv(h, caller.key, 'email\nanna.schmidt@example.com\n')).id;
    const all = await h.app.inject({ method: 'GET', url: `/api/jobs/${id}/download`, headers: bearer(caller.key) });
    expect(all.statusCode).toBe(409);
    expect(json(all)).toEqual({
      code: 'invalid_state',
      error: `job ${id} is queued; the result files exist once it has completed; GET /api/jobs/${id}/download?partial=true gives the rows done so far`,
    });
    const found = await h.app.inject({ method: 'GET', url: `/api/jobs/${id}/download?filter=found`, headers: bearer(caller.key) });
    expect(json(found).error).toContain(`GET /api/jobs/${id}/download?filter=found&partial=true gives the rows done so far`);
    await expect(h.engine.jobService.openResult(id, 'errors')).rejects.toThrow(
      `job ${id} is queued; the result files exist once it has completed; \`sluice jobs download ${id} --partial --filter errors --out FILE\` gives the rows done so far`,
    );
  });
});
