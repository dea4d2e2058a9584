import { afterEach, describe, expect, it } from 'vitest';
import { bearer, closeHarnesses, openStoreHarness, jobCount, json, multipart, newAccount, runUntilDone, storedObjects, uploadCsv, type ApiHarness, type Part } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';
import type { StoreKind } from '../../src/storage/store.js';

afterEach(closeHarnesses);

const harness = (store: StoreKind): Promise<ApiHarness> => openStoreHarness(store);

function dryRun(h: ApiHarness, key: string, fields: Record<string, string>, csv: string, options: { query?: boolean; idempotencyKey?: string } = {}) {
  const parts: Part[] = Object.entries({ ...(options.query ? {} : { dry_run: 'true' }), ...fields }).map(([name, value]) => ({ name, value }));
  parts.push({ name: 'file', value: csv, filename: 'estimate.csv' });
  const body = multipart(parts);
  return h.app.inject({
    method: 'POST',
    url: options.query ? '/api/jobs/bulk?dry_run=true' : '/api/jobs/bulk',
    headers: { ...bearer(key), ...body.headers, ...(options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {}) },
    payload: body.payload,
  });
}

const PAID = 'email\nmaria.rossi@example.com\n';
const FILE = [
  'email',
  'maria.rossi@example.com',
  'john.smith@example.com',
  'not-an-email',
  '',
  'JOHN.SMITH@example.com',
  'anna.schmidt@example.org',
  'also bad',
].join('\n');

describe.each(TEST_STORES)('POST /api/jobs/bulk with dry_run on %s', (store) => {
  it('counts rows, invalid rows, in-file duplicates and keys paid within the window, and charges and stores nothing', async () => {
    const h = await harness(store);
    const a = await newAccount(h, { credits: 50 });
    const paid = json(await uploadCsv(h, a.key, PAID)).id as string;
    await runUntilDone(h, [paid]);
    const balance = (await h.engine.deps.billing.requireAccount(a.id)).credits;
    expect(balance).toBe(49);
    const inputs = storedObjects(h, 'inputs/').length;

    for (const query of [false, true]) {
      const answer = await dryRun(h, a.key, { type: 'gender' }, FILE, { query });
      expect(answer.statusCode, answer.body).toBe(200);
      // Blank lines are skipped as a job skips them: 6 data rows.
      expect(json(answer)).toEqual({
        dry_run: true,
        rows: 6,
        valid: 4,
        invalid: 2,
        duplicates: 1,
        repeats: 1,
        credits_needed: 2,
        balance: 49,
        available: 49,
        invalid_by_code: { invalid_email: 2 },
      });
    }
    expect(await jobCount(h, a.id)).toBe(1);
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(49);
    expect(storedObjects(h, 'inputs/').length).toBe(inputs);

    // The estimate is what the job then charges.
    const real = json(await uploadCsv(h, a.key, FILE)).id as string;
    await runUntilDone(h, [real]);
    expect((await h.engine.deps.jobs.require(real)).creditsUsed).toBe(2);
  });

  it('refuses a file as its job would fail, with its code, and charges nothing; an empty balance may still ask', async () => {
    const h = await harness(store);
    const a = await newAccount(h, { credits: 0 });
    const headerOnly = await dryRun(h, a.key, { type: 'gender' }, 'email\n');
    expect([headerOnly.statusCode, json(headerOnly).code]).toEqual([422, 'no_rows']);
    const noColumn = await dryRun(h, a.key, { type: 'gender' }, 'name,city\nMaria,Rome\n');
    expect(noColumn.statusCode).toBe(422);
    const fine = await dryRun(h, a.key, { type: 'gender' }, 'email\nmaria.rossi@example.com\n');
    expect(fine.statusCode, fine.body).toBe(200);
    expect(json(fine)).toMatchObject({ rows: 1, credits_needed: 1, balance: 0, available: 0 });
    expect(await jobCount(h, a.id)).toBe(0);
    expect(storedObjects(h, 'inputs/')).toEqual([]);
    const bad = await dryRun(h, a.key, { type: 'gender', dry_run: 'maybe' }, 'email\nx@example.com\n');
    expect([bad.statusCode, json(bad).code]).toEqual([422, 'invalid_request']);
  });

  it('with several lookups, needs one credit per distinct key and lookup', async () => {
    const h = await harness(store);
    const a = await newAccount(h, { credits: 50 });
    const csv = ['email,phone', 'maria.rossi@example.com,+4915124914946', 'maria.rossi@example.com,+49 30 6094609', 'bad,+4915124914946'].join('\n');
    const body = multipart([
      { name: 'lookup', value: 'gender:email' },
      { name: 'lookup', value: 'phone_breaches:phone' },
      { name: 'dry_run', value: 'true' },
      { name: 'file', value: csv, filename: 'two.csv' },
    ]);
    const answer = await h.app.inject({ method: 'POST', url: '/api/jobs/bulk', headers: { ...bearer(a.key), ...body.headers }, payload: body.payload });
    expect(answer.statusCode, answer.body).toBe(200);
    // Emails: maria once (the second row repeats her); phones: two distinct numbers. The last row's
    // email is invalid and its number a repeat, so the row is a duplicate, as its job would mark it.
    expect(json(answer)).toMatchObject({ rows: 3, valid: 3, invalid: 0, duplicates: 1, repeats: 0, credits_needed: 3 });
  });

  it('neither claims nor records an Idempotency-Key: the same key then makes the real job', async () => {
    const h = await harness(store);
    const a = await newAccount(h, { credits: 10 });
    const estimate = await dryRun(h, a.key, { type: 'gender' }, PAID, { idempotencyKey: 'order-7' });
    expect(estimate.statusCode, estimate.body).toBe(200);
    const created = await uploadCsv(h, a.key, PAID, { idempotencyKey: 'order-7' });
    expect(created.statusCode, created.body).toBe(202);
    const again = await dryRun(h, a.key, { type: 'gender' }, 'email\nother@example.com\n', { idempotencyKey: 'order-7' });
    expect(again.statusCode, again.body).toBe(200);
    expect(await jobCount(h, a.id)).toBe(1);
  });
});
