import { afterEach, describe, expect, it } from 'vitest';
import { runJobId } from '../../src/monitors/run-starter.js';
import { bearer, closeHarnesses, json, newAccount, openStoreHarness } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';
import { driveRuns, runOf } from '../monitors/run-fixtures.js';

/**
 * Issue 27, finding 3: at balance 0 a bulk upload gets 402, but a monitor's run split its whole
 * target list into a job before pausing for credits: free work and storage. Now a run that cannot
 * pay for one target is refused before anything is written.
 */
describe.each(TEST_STORES)('a monitor run at balance 0 on %s', (kind) => {
  afterEach(() => closeHarnesses());

  it('is refused by hand with 402, and a scheduled one fails with insufficient_credits before its split', async () => {
    const h = await openStoreHarness(kind);
    const a = await newAccount(h, { credits: 0 });
    const targets = Array.from({ length: 300 }, (_, i) => `person${i}@example.com`);
    const created = await h.app.inject({ method: 'POST', url: '/api/monitors', headers: bearer(a.key), payload: { name: 'free', type: 'email', frequency: 'weekly', targets, start_at: '2099-01-01T00:00:00Z' } });
    expect(created.statusCode, created.body).toBe(201);
    const monitorId = json(created).id as string;

    const byHand = await h.app.inject({ method: 'POST', url: `/api/agent/monitors/${monitorId}/run`, headers: bearer(a.key) });
    expect(byHand.statusCode, byHand.body).toBe(402);

    // What the scheduler does when the period comes: queue a run, whatever the balance.
    const run = await h.deps.monitors.run(a.id, monitorId);
    await driveRuns(h.engine, a.id, [{ monitorId, runId: run.id }], 15_000);
    const ended = await runOf(h.engine.deps.store, a.id, monitorId, run.id);
    expect([ended.status, ended.reason]).toEqual(['failed', 'insufficient_credits']);
    expect(await h.engine.deps.jobs.get(runJobId(run.id))).toBeUndefined();
  }, 60_000);
});
