import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/shared/clock.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness, type ApiHarness } from '../support/api-harness.js';

const T0 = Date.UTC(2026, 2, 2, 9);
const DAY_MS = 86_400_000;

afterEach(closeHarnesses);

async function setup() {
  const clock = new FakeClock(T0);
  const h = await openApiHarness({}, clock);
  const alice = await newAccount(h);
  const bob = await newAccount(h);
  return { h, clock, alice: alice.key, bob: bob.key };
}

function call(h: ApiHarness, key: string, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) {
  return h.app.inject({ method, url, headers: bearer(key), ...(payload === undefined ? {} : { payload: payload as object }) });
}

async function created(h: ApiHarness, key: string, body: Record<string, unknown>) {
  const response = await call(h, key, 'POST', '/api/monitors', { name: 'Staff', type: 'email', frequency: 'weekly', ...body });
  expect(response.statusCode, response.body).toBe(201);
  return json(response);
}

describe('POST /api/monitors', () => {
  it('creates an active monitor due now with every field of its type, its billing, and what became of each target', async () => {
    const { h, alice } = await setup();
    const body = await created(h, alice, { targets: ['Jane Doe <JANE@example.com>', 'bob@example.com', 'jane@example.com', 'not-an-email', ''] });
    expect(body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'Staff',
      type: 'email',
      frequency: 'weekly',
      tracked_fields: ['breached', 'count', 'first_breach', 'last_breach', 'services', 'exposed_data', 'breaches'],
      change_detection: 'any_change',
      status: 'active',
      target_count: 2,
      credits_per_run: 2,
      next_run_at: new Date(T0).toISOString(),
      last_run_at: null,
      created_at: new Date(T0).toISOString(),
      updated_at: new Date(T0).toISOString(),
      billing: expect.stringContaining('1 credit per target the account has not paid for within the charge window'),
      targets: {
        added: 2,
        already_present: 0,
        duplicates: 1,
        invalid: { count: 2, by_code: { invalid_email: 1, empty_value: 1 }, examples: [{ row: 4, value: 'not-an-email', code: 'invalid_email' }, { row: 5, value: '', code: 'empty_value' }] },
      },
    });
    const targets = json(await call(h, alice, 'GET', `/api/monitors/${body.id}/targets`));
    expect(targets).toEqual({
      targets: [
        // In the order given (issue 33), not by address.
        { email: 'jane@example.com', target: 'jane@example.com', added_at: new Date(T0).toISOString() },
        { email: 'bob@example.com', target: 'bob@example.com', added_at: new Date(T0).toISOString() },
      ],
      total: 2,
      limit: 20,
      offset: 0,
    });
  });

  it('reads phone targets with default_country, tracks the fields asked for, and starts at start_at', async () => {
    const { h, alice } = await setup();
    const start = '2026-04-01T06:00:00.000Z';
    const body = await created(h, alice, {
      type: 'phone',
      frequency: 'monthly',
      tracked_fields: ['total_breaches', 'breached'],
      change_detection: 'new_only',
      start_at: start,
      default_country: 'de',
      targets: ['030 1234567', '+1 415 555 2671'],
    });
    expect(body).toMatchObject({ type: 'phone', tracked_fields: ['breached', 'total_breaches'], change_detection: 'new_only', next_run_at: start, target_count: 2 });
    const targets = json(await call(h, alice, 'GET', `/api/monitors/${body.id}/targets`)).targets;
    expect(targets.map((t: { phone: string }) => t.phone)).toEqual(['+49301234567', '+14155552671']);
  });

  it.each([
    [{ type: 'darkweb' }, 422, 'monitor_type_unsupported'],
    [{ type: 'fax' }, 422, 'unknown_monitor_type'],
    [{ tracked_fields: ['breached', 'shoe_size'] }, 422, 'unknown_tracked_field'],
    [{ tracked_fields: [] }, 422, 'unknown_tracked_field'],
    [{ frequency: 'daily' }, 422, 'invalid_request'],
    [{ change_detection: 'sometimes' }, 422, 'invalid_request'],
    [{ name: '' }, 422, 'invalid_request'],
    [{ start_at: 'next tuesday' }, 422, 'invalid_request'],
    [{ default_country: 'XX' }, 422, 'unknown_country'],
    [{ list_id: 'no-such-list' }, 404, 'list_not_found'],
    [{ surprise: true }, 422, 'invalid_request'],
  ])('refuses %j with %i %s, and makes nothing', async (over, status, code) => {
    const { h, alice } = await setup();
    const response = await call(h, alice, 'POST', '/api/monitors', { name: 'x', type: 'email', frequency: 'weekly', ...over });
    expect(response.statusCode, response.body).toBe(status);
    expect(json(response).code).toBe(code);
    expect(json(await call(h, alice, 'GET', '/api/monitors')).total).toBe(0);
  });

  it('is refused to a read-only key', async () => {
    const { h } = await setup();
    const reader = await newAccount(h, { role: 'readonly' });
    const response = await call(h, reader.key, 'POST', '/api/monitors', { name: 'x', type: 'email', frequency: 'weekly' });
    expect(response.statusCode).toBe(403);
  });
});

describe('monitors of another account', () => {
  it('are 404 on every route, and never listed', async () => {
    const { h, alice, bob } = await setup();
    const { id } = await created(h, alice, { targets: ['a@example.com'] });
    const attempts: [method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown][] = [
      ['GET', `/api/monitors/${id}`],
      ['PATCH', `/api/monitors/${id}`, { name: 'mine now' }],
      ['POST', `/api/monitors/${id}/pause`],
      ['POST', `/api/monitors/${id}/resume`],
      ['GET', `/api/monitors/${id}/targets`],
      ['POST', `/api/monitors/${id}/targets`, { targets: ['b@example.com'] }],
      ['DELETE', `/api/monitors/${id}/targets`, { targets: ['a@example.com'] }],
      ['POST', `/api/agent/monitors/${id}/run`],
      ['DELETE', `/api/monitors/${id}`],
    ];
    for (const [method, url, payload] of attempts) {
      const response = await call(h, bob, method, url, payload);
      expect(response.statusCode, `${method} ${url}`).toBe(404);
      expect(json(response).code).toBe('monitor_not_found');
    }
    expect(json(await call(h, bob, 'GET', '/api/monitors')).total).toBe(0);
    expect(json(await call(h, bob, 'GET', '/api/monitoring/targets')).total).toBe(0);
    expect(json(await call(h, alice, 'GET', `/api/monitors/${id}`))).toMatchObject({ name: 'Staff', status: 'active', target_count: 1 });
  });
});

describe('GET /api/monitors', () => {
  it('pages with limit, offset and total, filters by type and status, and checks its query', async () => {
    const { h, alice, clock } = await setup();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await created(h, alice, { name: `m${i}`, type: i < 3 ? 'email' : 'company' })).id);
      clock.advance(1000);
    }
    await call(h, alice, 'POST', `/api/monitors/${ids[0]}/pause`);
    const page = json(await call(h, alice, 'GET', '/api/monitors?limit=2&offset=1'));
    expect(page).toMatchObject({ total: 5, limit: 2, offset: 1 });
    expect(page.monitors.map((m: { name: string }) => m.name)).toEqual(['m1', 'm2']);
    expect(json(await call(h, alice, 'GET', '/api/monitors?type=company')).monitors.map((m: { name: string }) => m.name)).toEqual(['m3', 'm4']);
    expect(json(await call(h, alice, 'GET', '/api/monitors?status=paused')).monitors.map((m: { name: string }) => m.name)).toEqual(['m0']);
    expect((await call(h, alice, 'GET', '/api/monitors?limit=101')).statusCode).toBe(422);
    expect((await call(h, alice, 'GET', '/api/monitors?type=darkweb')).statusCode).toBe(422);
  });
});

describe('PATCH, pause, resume and DELETE /api/monitors/{id}', () => {
  it('updates what is given, hides next_run_at while paused, and resumes at the next period without a catch-up run', async () => {
    const { h, alice, clock } = await setup();
    const { id } = await created(h, alice, {});
    const patched = json(await call(h, alice, 'PATCH', `/api/monitors/${id}`, { name: 'Renamed', tracked_fields: ['breached'], frequency: 'biweekly' }));
    expect(patched).toMatchObject({ name: 'Renamed', tracked_fields: ['breached'], frequency: 'biweekly', next_run_at: new Date(T0).toISOString() });
    expect(json(await call(h, alice, 'PATCH', `/api/monitors/${id}`, { tracked_fields: ['summary'] })).code).toBe('unknown_tracked_field');
    expect((await call(h, alice, 'PATCH', `/api/monitors/${id}`, {})).statusCode).toBe(422);
    await h.engine.deps.store.monitors.claimDueRuns(T0, 10);
    const paused = json(await call(h, alice, 'POST', `/api/monitors/${id}/pause`));
    expect(paused).toMatchObject({ status: 'paused', next_run_at: null, last_run_at: new Date(T0).toISOString() });
    clock.advance(30 * DAY_MS);
    expect(await h.engine.deps.store.monitors.claimDueRuns(clock.now(), 10)).toEqual([]);
    const resumed = json(await call(h, alice, 'POST', `/api/monitors/${id}/resume`));
    expect(resumed).toMatchObject({ status: 'active', next_run_at: new Date(T0 + 42 * DAY_MS).toISOString() });
    const deleted = await call(h, alice, 'DELETE', `/api/monitors/${id}`);
    expect(json(deleted)).toEqual({ id, deleted: true });
    expect((await call(h, alice, 'GET', `/api/monitors/${id}`)).statusCode).toBe(404);
    expect((await call(h, alice, 'DELETE', `/api/monitors/${id}`)).statusCode).toBe(404);
  });
});

describe('/api/monitors/{id}/targets', () => {
  it('adds given and listed targets once each, reports the invalid ones, removes by the same reading, and pages', async () => {
    const { h, alice } = await setup();
    const { id } = await created(h, alice, { targets: ['a@example.com'] });
    const list = json(await call(h, alice, 'POST', '/api/lists', { name: 'more', type: 'email', targets: ['c@example.com', 'd@example.com'] }));
    const added = json(await call(h, alice, 'POST', `/api/monitors/${id}/targets`, { targets: ['A@example.com', 'b@example.com', 'nope'], list_id: list.id }));
    expect(added).toEqual({ added: 3, already_present: 1, duplicates: 0, invalid: { count: 1, by_code: { invalid_email: 1 }, examples: [{ row: 3, value: 'nope', code: 'invalid_email' }] }, target_count: 4 });
    const page = json(await call(h, alice, 'GET', `/api/monitors/${id}/targets?limit=2&offset=2`));
    expect(page.targets.map((t: { email: string }) => t.email)).toEqual(['c@example.com', 'd@example.com']);
    expect(page.total).toBe(4);
    const removed = json(await call(h, alice, 'DELETE', `/api/monitors/${id}/targets`, { targets: ['B@EXAMPLE.COM', 'zz@example.com'] }));
    expect(removed).toMatchObject({ removed: 1, absent: 1, target_count: 3 });
    const phones = json(await call(h, alice, 'POST', '/api/lists', { name: 'phones', type: 'phone', targets: ['+49301234567'] }));
    const wrongType = await call(h, alice, 'POST', `/api/monitors/${id}/targets`, { list_id: phones.id });
    expect(wrongType.statusCode).toBe(422);
    expect((await call(h, alice, 'POST', `/api/monitors/${id}/targets`, {})).statusCode).toBe(422);
    expect((await call(h, alice, 'DELETE', `/api/monitors/${id}/targets`, {})).statusCode).toBe(422);
  });
});

describe('POST /api/agent/monitors/{id}/run', () => {
  it('queues a run by hand without moving the schedule; a second waits; a paused monitor and a bad key are refused', async () => {
    const { h, alice, clock } = await setup();
    const { id, next_run_at } = await created(h, alice, { start_at: new Date(T0 + 3 * DAY_MS).toISOString() });
    clock.advance(DAY_MS);
    const response = await call(h, alice, 'POST', `/api/agent/monitors/${id}/run`);
    expect(response.statusCode, response.body).toBe(202);
    expect(json(response)).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      monitor_id: id,
      status: 'queued',
      trigger: 'manual',
      period_start: null,
      job_id: null,
      created_at: new Date(T0 + DAY_MS).toISOString(),
      started_at: null,
      finished_at: null,
      stats: { total_records: null, changes_detected: null, credits_used: null, duration_ms: null },
    });
    expect(json(await call(h, alice, 'GET', `/api/monitors/${id}`))).toMatchObject({ next_run_at, last_run_at: new Date(T0 + DAY_MS).toISOString() });
    const again = await call(h, alice, 'POST', `/api/agent/monitors/${id}/run`);
    expect(again.statusCode).toBe(409);
    expect(json(again)).toMatchObject({ code: 'run_in_progress' });
    const { id: other } = await created(h, alice, {});
    await call(h, alice, 'POST', `/api/monitors/${other}/pause`);
    const paused = await call(h, alice, 'POST', `/api/agent/monitors/${other}/run`);
    expect(paused.statusCode).toBe(409);
    expect(json(paused).code).toBe('invalid_state');
    const badKey = await call(h, 'sluice_nope', 'POST', `/api/agent/monitors/${id}/run`);
    expect(badKey.statusCode).toBe(401);
    expect(json(badKey)).toEqual({ c: 401, m: 'bad key' });
  });
});

describe('GET /api/monitoring/targets', () => {
  it('lists each watched target once with its monitors, filtered by type, paginated', async () => {
    const { h, alice } = await setup();
    const one = await created(h, alice, { targets: ['a@example.com', 'b@example.com'] });
    const two = await created(h, alice, { targets: ['b@example.com'] });
    await created(h, alice, { type: 'phone', targets: ['+49301234567'] });
    const emails = json(await call(h, alice, 'GET', '/api/monitoring/targets?type=email&limit=1&offset=1'));
    expect(emails).toEqual({
      targets: [{ email: 'b@example.com', target: 'b@example.com', type: 'email', monitor_ids: [one.id, two.id].sort(), added_at: new Date(T0).toISOString() }],
      total: 2,
      limit: 1,
      offset: 1,
    });
    expect(json(await call(h, alice, 'GET', '/api/monitoring/targets')).total).toBe(3);
    const phone = json(await call(h, alice, 'GET', '/api/monitoring/targets?type=phone')).targets[0];
    expect(phone).toMatchObject({ phone: '+49301234567', target: '+49301234567', type: 'phone' });
    const unsupported = await call(h, alice, 'GET', '/api/monitoring/targets?type=darkweb');
    expect(unsupported.statusCode).toBe(422);
    expect(json(unsupported).code).toBe('monitor_type_unsupported');
  });
});
