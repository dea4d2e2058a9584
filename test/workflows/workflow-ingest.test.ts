import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/shared/clock.js';
import { ingestTokenHash, INGEST_PER_TOKEN } from '../../src/api/routes/workflow-ingest-routes.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness, type ApiHarness } from '../support/api-harness.js';
import { storeEnv, TEST_STORES } from '../support/test-engine.js';

const drops: Array<() => Promise<void>> = [];
afterEach(async () => {
  await closeHarnesses();
  for (const d of drops.splice(0)) await d();
});

const STEPS = [{ id: 'echo', type: 'transform', config: { expression: { var: 'input.email' } } }];

describe.each(TEST_STORES)('the workflow ingest URL on %s', (kind) => {
  let h: ApiHarness;
  let key: string;
  let clock: FakeClock;

  async function setup() {
    const { env, drop } = await storeEnv(kind);
    drops.push(drop);
    clock = new FakeClock(Date.UTC(2026, 3, 1));
    h = await openApiHarness(env, clock);
    key = (await newAccount(h)).key;
  }
  const api = (method: 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) =>
    h.app.inject({ method, url, headers: bearer(key), ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }) });
  const ingest = (token: string, payload: unknown, headers: Record<string, string> = {}) =>
    h.app.inject({ method: 'POST', url: `/api/ingest/workflows/${token}`, headers: { 'content-type': 'application/json', ...headers }, payload: typeof payload === 'string' ? payload : JSON.stringify(payload) });

  it('a token of 32 random bytes shown once and kept as a hash starts runs without a key; Idempotency-Key answers the first run; rotation keeps the old token for its grace period; revocation ends both', async () => {
    await setup();
    const wf = json(await api('POST', '/api/workflows', { name: 'in', steps: STEPS }));
    const made = await api('POST', `/api/workflows/${wf.id}/ingest-token`);
    expect(made.statusCode, made.body).toBe(201);
    const { token, ingest_path } = json(made);
    expect(Buffer.from(token.slice(4), 'base64url')).toHaveLength(32);
    expect(ingest_path).toBe(`/api/ingest/workflows/${token}`);
    expect(await h.engine.deps.store.workflows.byIngestToken(ingestTokenHash(token), clock.now())).toMatchObject({ id: wf.id });
    expect(JSON.stringify(json(await h.app.inject({ method: 'GET', url: `/api/workflows/${wf.id}`, headers: bearer(key) })))).not.toContain(token);

    const first = await ingest(token, { email: 'a@example.com' }, { 'idempotency-key': 'order-1' });
    expect(first.statusCode, first.body).toBe(202);
    const again = await ingest(token, { email: 'a@example.com' }, { 'idempotency-key': 'order-1' });
    expect(again.statusCode).toBe(200);
    expect(json(again).id).toBe(json(first).id);
    expect((await ingest(token, { email: 'b@example.com' }, { 'idempotency-key': 'order-2' })).statusCode).toBe(202);

    const rotated = json(await api('POST', `/api/workflows/${wf.id}/ingest-token`)).token;
    expect((await ingest(rotated, {})).statusCode).toBe(202);
    expect((await ingest(token, {})).statusCode).toBe(202);
    clock.advance(24 * 3_600_000 + 1);
    expect((await ingest(token, {})).statusCode).toBe(404);
    expect((await ingest(rotated, {})).statusCode).toBe(202);

    expect((await api('DELETE', `/api/workflows/${wf.id}/ingest-token`)).statusCode).toBe(200);
    expect((await ingest(rotated, {})).statusCode).toBe(404);
    expect((await ingest('wfi_guess', {})).statusCode).toBe(404);
  });

  it('answers 404 for a paused or deleted workflow, refuses bodies too large, too deep, not JSON or not an object, and limits a burst with 429 and Retry-After', async () => {
    await setup();
    const wf = json(await api('POST', '/api/workflows', { name: 'in', steps: STEPS }));
    const token = json(await api('POST', `/api/workflows/${wf.id}/ingest-token`)).token;

    expect((await ingest(token, { blob: 'x'.repeat(70_000) })).statusCode).toBe(413);
    let deep: unknown = 1;
    for (let i = 0; i < 25; i++) deep = { d: deep };
    expect((await ingest(token, deep)).statusCode).toBe(422);
    expect((await ingest(token, [1, 2])).statusCode).toBe(422);
    const text = await h.app.inject({ method: 'POST', url: `/api/ingest/workflows/${token}`, headers: { 'content-type': 'text/plain' }, payload: 'hello' });
    expect(text.statusCode).toBe(415);

    const answers: number[] = [];
    let retryAfter: string | undefined;
    for (let i = 0; i < INGEST_PER_TOKEN + 5; i++) {
      const r = await ingest(token, { i });
      answers.push(r.statusCode);
      if (r.statusCode === 429) retryAfter = r.headers['retry-after'] as string;
    }
    // Of the refused bodies above, only the too deep one reached the handler and its token check:
    // the others were refused before (size while reading, media type, schema).
    expect(answers.filter((s) => s === 202).length).toBe(INGEST_PER_TOKEN - 1);
    expect(answers.slice(-5)).toEqual([429, 429, 429, 429, 429]);
    expect(Number(retryAfter)).toBeGreaterThan(0);
    const runs = json(await h.app.inject({ method: 'GET', url: `/api/workflows/runs?workflow_id=${wf.id}&limit=100`, headers: bearer(key) }));
    expect(runs.total).toBe(INGEST_PER_TOKEN - 1);

    clock.advance(120_000);
    await api('PUT', `/api/workflows/${wf.id}`, { name: 'in', status: 'paused', steps: STEPS });
    expect((await ingest(token, {})).statusCode).toBe(404);
    await api('PUT', `/api/workflows/${wf.id}`, { name: 'in', status: 'active', steps: STEPS });
    expect((await ingest(token, {})).statusCode).toBe(202);
    await api('DELETE', `/api/workflows/${wf.id}`);
    expect((await ingest(token, {})).statusCode).toBe(404);
  });
});
