import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { importBreaches } from '../../src/cli/import-command.js';
import { addKey, bearer, closeHarnesses, json, multipart, newAccount, openApiHarness, runUntilDone, type ApiHarness } from '../support/api-harness.js';
import { resultRecords } from '../support/csv-fixture.js';

const BREACHES = 'phone,breach,breached_at\n+49301234567,Acme,2019-05-01\n+49301234567,Globex,2021-02-03\n+14155552671,Hooli,2024-03-01\n';

async function harness(): Promise<ApiHarness> {
  const h = await openApiHarness();
  await importBreaches(h.engine.deps.store.breaches, Readable.from([Buffer.from(BREACHES)]), { maxLineBytes: 65_536 });
  return h;
}

afterEach(closeHarnesses);

describe('POST /api/agent/phone-breaches', () => {
  it('answers the spec fields for a breached number and charges 1 credit on every call, repeats included', async () => {
    const h = await harness();
    const { id, key } = await newAccount(h, { credits: 10 });
    for (const query of ['+49 30 1234567', '+49 (30) 123-4567']) {
      const response = await h.app.inject({ method: 'POST', url: '/api/agent/phone-breaches', headers: bearer(key), payload: { query } });
      expect(response.statusCode, response.body).toBe(200);
      expect(json(response)).toEqual({
        phone: '+49301234567',
        breached: true,
        total_breaches: 2,
        first_breached: '2019-05-01',
        last_breached: '2021-02-03',
        summary: expect.stringContaining('Acme'),
        credits: 1,
      });
    }
    const clean = json(await h.app.inject({ method: 'POST', url: '/api/agent/phone-breaches', headers: bearer(key), payload: { query: '+44 20 7946 0958' } }));
    expect(clean).toMatchObject({ phone: '+442079460958', breached: false, total_breaches: 0, credits: 1 });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(7);
  });

  it('refuses a number without its country code (400, free), a bad key with the agent body, and an empty balance with 402', async () => {
    const h = await harness();
    const { id, key } = await newAccount(h, { credits: 1 });
    const local = await h.app.inject({ method: 'POST', url: '/api/agent/phone-breaches', headers: bearer(key), payload: { query: '030 1234567' } });
    expect(local.statusCode).toBe(400);
    expect(json(local)).toMatchObject({ code: 'missing_country_code' });
    const missing = await h.app.inject({ method: 'POST', url: '/api/agent/phone-breaches', headers: bearer(key), payload: {} });
    expect(missing.statusCode).toBe(400);
    const badKey = await h.app.inject({ method: 'POST', url: '/api/agent/phone-breaches', headers: bearer('sluice_nope'), payload: { query: '+14155552671' } });
    expect(badKey.statusCode).toBe(401);
    expect(json(badKey)).toEqual({ c: 401, m: 'bad key' });
    expect((await h.app.inject({ method: 'POST', url: '/api/agent/phone-breaches', headers: bearer(key), payload: { query: '+14155552671' } })).statusCode).toBe(200);
    const broke = await h.app.inject({ method: 'POST', url: '/api/agent/phone-breaches', headers: bearer(key), payload: { query: '+14155552671' } });
    expect(broke.statusCode).toBe(402);
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(0);
  });
});

describe('/api/phone-jobs', () => {
  it('takes a JSON list of numbers, reports progress by id, and links the results once completed; a repeat job is free', async () => {
    const h = await harness();
    const { id, key } = await newAccount(h, { credits: 100 });
    const numbers = ['030 1234567', '+1 415 555 2671', '+49 30 1234567', 'not a number', '0151 23456789'];
    const created = await h.app.inject({ method: 'POST', url: '/api/phone-jobs', headers: bearer(key), payload: { feature: 'breaches', numbers, default_country: 'DE', download_link: true } });
    expect(created.statusCode, created.body).toBe(202);
    const job = json(created);
    expect(job).toMatchObject({ type: 'phone_breaches', status: 'queued', feature: 'breaches', download_link: true });
    await runUntilDone(h, [job.id]);

    const progress = json(await h.app.inject({ method: 'GET', url: `/api/phone-jobs?id=${job.id}`, headers: bearer(key) }));
    expect(progress).toMatchObject({ status: 'completed', percent: 100, rows: { total: 5, found: 3, invalid: 1, duplicate: 1 }, credits_used: 3 });
    const found = await fetch(progress.download_urls.found.download_url);
    expect(found.status).toBe(200);
    const rows = await resultRecords(await found.text());
    expect(rows.map((r) => r.phone_e164)).toEqual(['+49301234567', '+14155552671', '+49301234567']);

    const again = json(await h.app.inject({ method: 'POST', url: '/api/phone-jobs', headers: bearer(key), payload: { feature: 'breaches', numbers, default_country: 'DE' } }));
    await runUntilDone(h, [again.id]);
    expect(json(await h.app.inject({ method: 'GET', url: `/api/phone-jobs?id=${again.id}`, headers: bearer(key) })).credits_used).toBe(0);
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(97);
  });

  it('takes a CSV file in a multipart form with feature=breaches', async () => {
    const h = await harness();
    const { key } = await newAccount(h, { credits: 100 });
    const body = multipart([
      { name: 'feature', value: 'breaches' },
      { name: 'file', value: 'name,phone\nAnn,+14155552671\nBob,+442079460958\n', filename: 'numbers.csv' },
    ]);
    const created = await h.app.inject({ method: 'POST', url: '/api/phone-jobs', headers: { ...bearer(key), ...body.headers }, payload: body.payload });
    expect(created.statusCode, created.body).toBe(202);
    await runUntilDone(h, [json(created).id]);
    const done = json(await h.app.inject({ method: 'GET', url: `/api/phone-jobs?id=${json(created).id}`, headers: bearer(key) }));
    expect(done).toMatchObject({ status: 'completed', rows: { total: 2, found: 1 }, credits_used: 2 });
  });

  it.each([
    [{ feature: 'gender', numbers: ['+14155552671'] }, 422, 'feature'],
    [{ numbers: ['+14155552671'] }, 422, 'feature'],
    [{ feature: 'breaches', numbers: [] }, 422, 'numbers'],
    [{ feature: 'breaches', numbers: [4155552671] }, 422, 'numbers'],
    [{ feature: 'breaches', numbers: ['+14155552671'], default_country: 'Germany' }, 422, 'default_country'],
    [{ feature: 'breaches', numbers: ['+14155552671'], download_link: 'yes' }, 422, 'download_link'],
  ])('refuses %j with %i, naming %s, and makes no job', async (payload, status, field) => {
    const h = await harness();
    const { id, key } = await newAccount(h);
    const response = await h.app.inject({ method: 'POST', url: '/api/phone-jobs', headers: bearer(key), payload });
    expect(response.statusCode).toBe(status);
    expect(json(response).error).toContain(field);
    expect((await h.engine.deps.jobs.list({ accountId: id, limit: 10, offset: 0 })).total).toBe(0);
  });

  // Proved by a body that is not JSON at all: parsed first, it would be a 400 for malformed JSON.
  it('refuses a JSON list before parsing it when the account has no credits (402) or the key may not write (403)', async () => {
    const h = await harness();
    const broke = await newAccount(h, { credits: 0 });
    const asJson = { ...bearer(broke.key), 'content-type': 'application/json' };
    const unpaid = await h.app.inject({ method: 'POST', url: '/api/phone-jobs', headers: asJson, payload: '{"feature": "breaches", "numbers": ["+1415' });
    expect(unpaid.statusCode, unpaid.body).toBe(402);
    expect(json(unpaid).code).toBe('insufficient_credits');

    const paying = await newAccount(h, { credits: 100 });
    const { key: readonly } = await addKey(h, paying.id, 'readonly');
    const forbidden = await h.app.inject({ method: 'POST', url: '/api/phone-jobs', headers: { ...bearer(readonly), 'content-type': 'application/json' }, payload: '{"feature": ' });
    expect(forbidden.statusCode, forbidden.body).toBe(403);
    // A paying, writing key still gets the parser's answer to a broken body.
    const malformed = await h.app.inject({ method: 'POST', url: '/api/phone-jobs', headers: { ...bearer(paying.key), 'content-type': 'application/json' }, payload: '{"feature": ' });
    expect(malformed.statusCode, malformed.body).toBe(400);
  });

  it('answers 400 without an id and 404 for another account\'s job', async () => {
    const h = await harness();
    const owner = await newAccount(h);
    const other = await newAccount(h);
    const job = json(await h.app.inject({ method: 'POST', url: '/api/phone-jobs', headers: bearer(owner.key), payload: { feature: 'breaches', numbers: ['+14155552671'] } }));
    expect((await h.app.inject({ method: 'GET', url: '/api/phone-jobs', headers: bearer(owner.key) })).statusCode).toBe(400);
    expect((await h.app.inject({ method: 'GET', url: `/api/phone-jobs?id=${job.id}`, headers: bearer(other.key) })).statusCode).toBe(404);
  });
});
