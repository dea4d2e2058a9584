import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { readCsvRows } from '../../src/jobs/csv-reader.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness, runUntilDone } from '../support/api-harness.js';
import { resultRecords } from '../support/csv-fixture.js';

afterEach(closeHarnesses);

async function rowsOf(text: string): Promise<string[][]> {
  const out: string[][] = [];
  for await (const batch of readCsvRows(Readable.from([Buffer.from(text)]), { maxLineBytes: 1024 })) out.push(...batch);
  return out;
}

describe('blank entries of a JSON phone list', () => {
  it('the reader keeps a quoted empty cell as a row, and still skips a blank line', async () => {
    expect(await rowsOf('phone\n""\n\n"  "\n+4930 6094609\n')).toEqual([['phone'], [''], ['  '], ['+4930 6094609']]);
  });

  it('are rows of their own, invalid with empty_value, so the output has one row per entry', async () => {
    const h = await openApiHarness();
    const { key } = await newAccount(h, { credits: 10 });
    const numbers = ['+4915124914946', '', '  ', '+4930 6094609'];
    const created = await h.app.inject({ method: 'POST', url: '/api/phone-jobs', headers: bearer(key), payload: { feature: 'breaches', numbers } });
    expect(created.statusCode, created.body).toBe(202);
    const job = json(created);
    await runUntilDone(h, [job.id]);
    const done = json(await h.app.inject({ method: 'GET', url: `/api/phone-jobs?id=${job.id}`, headers: bearer(key) }));
    expect(done).toMatchObject({ status: 'completed', rows: { total: 4, invalid: 2 }, credits_used: 2 });
    const all = await resultRecords(await (await fetch(done.download_urls.all.download_url)).text());
    expect(all.map((r) => [r.phone, r.status, r.error])).toEqual([
      ['+4915124914946', 'ok', ''],
      ['', 'invalid', 'empty_value'],
      ['  ', 'invalid', 'empty_value'],
      ['+4930 6094609', 'ok', ''],
    ]);
  });

  it('a list of only blanks completes with every entry invalid and nothing charged', async () => {
    const h = await openApiHarness();
    const { id, key } = await newAccount(h, { credits: 10 });
    const created = await h.app.inject({ method: 'POST', url: '/api/phone-jobs', headers: bearer(key), payload: { feature: 'breaches', numbers: ['', ' ', '\t'] } });
    expect(created.statusCode, created.body).toBe(202);
    await runUntilDone(h, [json(created).id]);
    const done = json(await h.app.inject({ method: 'GET', url: `/api/phone-jobs?id=${json(created).id}`, headers: bearer(key) }));
    expect(done).toMatchObject({ rows: { total: 3, invalid: 3 }, credits_used: 0 });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(10);
  });

  it('an empty list is a 422', async () => {
    const h = await openApiHarness();
    const { key } = await newAccount(h, { credits: 10 });
    const empty = await h.app.inject({ method: 'POST', url: '/api/phone-jobs', headers: bearer(key), payload: { feature: 'breaches', numbers: [] } });
    expect(empty.statusCode).toBe(422);
    expect(json(empty)).toMatchObject({ code: 'invalid_request' });
  });
});
