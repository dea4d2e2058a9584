import os from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/shared/clock.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness, runUntilDone, uploadCsv, type ApiHarness } from '../support/api-harness.js';
import { storeEnv, TEST_STORES } from '../support/test-engine.js';
import type { StoreKind } from '../../src/storage/store.js';

/**
 * Issue #18 items 1 and 2 through the API: a job no live worker holds is `stalled` (since when),
 * `POST .../resume` continues it, a running job held by a live worker is refused with who holds it,
 * and every job view carries rows per second, the time left and the last progress time.
 */

const CSV = 'email\nanna.schmidt@example.com\njohn.smith@example.org\nnot-an-email\n';
const T0 = Date.UTC(2026, 3, 1);
/** A pid no process has: above Linux's pid_max limit (2^22). */
const DEAD_OWNER = `${os.hostname()}:4194400:deadbeef`;
const drops: Array<() => Promise<void>> = [];

afterEach(async () => {
  await closeHarnesses();
  for (const drop of drops.splice(0)) await drop();
});

async function harness(store: StoreKind, clock: FakeClock): Promise<ApiHarness> {
  const { env, drop } = await storeEnv(store);
  drops.push(drop);
  return openApiHarness(env, clock);
}

const iso = (ms: number) => new Date(ms).toISOString();

describe.each(TEST_STORES)('job progress and stalled jobs through the API on %s', (store) => {
  it('shows a job whose worker died as stalled, resumes it, and gives its rate once it has run', async () => {
    const clock = new FakeClock(T0);
    const h = await harness(store, clock);
    const leaseMs = h.engine.deps.limits.leaseSeconds * 1000;
    const caller = await newAccount(h, { credits: 50 });
    const id = json(await uploadCsv(h, caller.key, CSV)).id as string;
    const get = async () => json(await h.app.inject({ method: 'GET', url: `/api/jobs/${id}`, headers: bearer(caller.key) }));

    // Queued: waiting for a worker is not a stall, and there is no rate yet.
    expect(await get()).toMatchObject({ status: 'queued', stalled: false, stalled_since: null, last_progress_at: null, rows_per_second: null, eta_seconds: null });

    // A worker of this host took its split and died holding the lease.
    const claim = await h.engine.deps.jobs.acquireJobPhase(DEAD_OWNER, T0, leaseMs);
    expect(claim?.job.id).toBe(id);
    clock.advance(1000);
    expect(await get()).toMatchObject({ status: 'running', stalled: true, stalled_since: iso(T0), last_progress_at: iso(T0), eta_seconds: null });
    const listed = json(await h.app.inject({ method: 'GET', url: '/api/jobs', headers: bearer(caller.key) }));
    expect(listed.jobs.find((j: { id: string }) => j.id === id)).toMatchObject({ stalled: true, stalled_since: iso(T0) });

    // Resuming frees the dead worker's lease: any worker may take the split at once.
    const resumed = await h.app.inject({ method: 'POST', url: `/api/jobs/${id}/resume`, headers: bearer(caller.key) });
    expect(resumed.statusCode, resumed.body).toBe(200);
    expect(json(resumed)).toMatchObject({ id, status: 'running', stalled: false });
    expect(await h.engine.deps.jobs.acquireJobPhase('worker-elsewhere', clock.now(), leaseMs)).toMatchObject({ job: { id } });

    // A live holder (of another host, never known dead here) keeps the job from being resumed.
    const refused = await h.app.inject({ method: 'POST', url: `/api/jobs/${id}/resume`, headers: bearer(caller.key) });
    expect(refused.statusCode).toBe(409);
    expect(json(refused).error).toBe(
      `Job ${id} cannot be resumed: it is running on worker worker-elsewhere (lease until ${iso(clock.now() + leaseMs)}); follow it with GET /api/jobs/${id}. Paused, failed and stalled jobs can be resumed.`,
    );

    // Its lease runs out and a lease time passes with no worker: stalled since the lease ran out.
    clock.advance(2 * leaseMs);
    expect(await get()).toMatchObject({ status: 'running', stalled: true, stalled_since: iso(T0 + 1000 + leaseMs) });
    expect((await h.app.inject({ method: 'POST', url: `/api/jobs/${id}/resume`, headers: bearer(caller.key) })).statusCode).toBe(200);

    await runUntilDone(h, [id]);
    const done = await get();
    const started = Date.parse(done.started_at as string);
    const last = Date.parse(done.last_progress_at as string);
    expect(last - started).toBeGreaterThan(0);
    expect(done).toMatchObject({ status: 'completed', stalled: false, eta_seconds: null, rows_per_second: Math.round((3 / ((last - started) / 1000)) * 10) / 10 });
  });

  it('GET /api/phone-jobs?id= gives the same progress figures', async () => {
    const clock = new FakeClock(T0);
    const h = await harness(store, clock);
    const caller = await newAccount(h, { credits: 50 });
    const created = await h.app.inject({ method: 'POST', url: '/api/phone-jobs', headers: bearer(caller.key), payload: { feature: 'breaches', numbers: ['+4915124914946', '+49 30 6094609'] } });
    expect(created.statusCode, created.body).toBe(202);
    const id = json(created).id as string;
    const shown = json(await h.app.inject({ method: 'GET', url: `/api/phone-jobs?id=${id}`, headers: bearer(caller.key) }));
    expect(shown).toMatchObject({ id, status: 'queued', stalled: false, stalled_since: null, last_progress_at: null, rows_per_second: null, eta_seconds: null });
  });
});
