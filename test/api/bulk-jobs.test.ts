import { PassThrough, Readable } from 'node:stream';
import { request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  bearer,
  closeHarnesses,
  expectNoLeak,
  jobCount,
  json,
  listen,
  newAccount,
  openApiHarness,
  partHead,
  runUntilDone,
  storedObjects,
  streamToBuffer,
  uploadCsv,
  type ApiHarness,
} from '../support/api-harness.js';
import { resultRecords } from '../support/csv-fixture.js';

afterEach(closeHarnesses);

const CSV = [
  'id,email,name',
  '1,maria.rossi@example.com,Maria',
  '2,john.smith@example.com,John',
  '3,not-an-email,Nobody',
  '4,MARIA.ROSSI@example.com,Maria again',
  '5,info@example.com,Info desk',
].join('\n');

function get(h: ApiHarness, key: string, url: string) {
  return h.app.inject({ method: 'GET', url, headers: bearer(key) });
}

describe('a bulk gender job through the API', () => {
  it('upload gives 202 with a queued job; after the worker, the job is completed with its counts and 100 percent', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 100 });

    const upload = await uploadCsv(h, a.key, CSV, { downloadLink: 'true', filename: 'people.csv' });
    expect(upload.statusCode).toBe(202);
    const job = json(upload);
    expect(job).toMatchObject({ type: 'gender', status: 'queued', input_name: 'people.csv', download_link: true, downloads: null, percent: 0, credits_used: 0 });
    expect(job.id).toMatch(/^job_/);
    expect(job).not.toHaveProperty('account_id');
    expect(job).not.toHaveProperty('outputs');
    expect(JSON.stringify(job)).not.toContain('inputs/');

    await runUntilDone(h, [job.id]);

    const done = json(await get(h, a.key, `/api/jobs/${job.id}`));
    expect(done).toMatchObject({
      id: job.id,
      status: 'completed',
      percent: 100,
      rows: { total: 5, processed: 5, invalid: 1, duplicate: 1, error: 0 },
      downloads: { all: `/api/jobs/${job.id}/download?filter=all`, found: `/api/jobs/${job.id}/download?filter=found` },
    });
    expect(done.rows.found).toBeGreaterThanOrEqual(2);
    // maria, john and info are charged once each; the invalid row and the repeat are free.
    expect(done.credits_used).toBe(3);
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(97);
    expect(done.finished_at).not.toBeNull();
  });

  it('reads the column the caller names', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 10 });
    const upload = await uploadCsv(h, a.key, 'id,Work Email,email\n1,maria.rossi@example.com,not-used\n', { column: 'work email' });
    expect(upload.statusCode).toBe(202);
    await runUntilDone(h, [json(upload).id]);
    expect(json(await get(h, a.key, `/api/jobs/${json(upload).id}`))).toMatchObject({ status: 'completed', rows: { total: 1, found: 1, invalid: 0 } });
  });

  it('lists jobs newest first with limit (default 20), offset, status and total', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 100 });
    const ids: string[] = [];
    for (let i = 0; i < 21; i++) ids.push(json(await uploadCsv(h, a.key, `email\nperson${i}@example.com\n`)).id);
    const cancelled = ids[3]!;
    expect((await h.app.inject({ method: 'POST', url: `/api/jobs/${cancelled}/cancel`, headers: bearer(a.key) })).statusCode).toBe(200);

    const first = json(await get(h, a.key, '/api/jobs'));
    expect(first).toMatchObject({ total: 21, limit: 20, offset: 0 });
    expect(first.jobs).toHaveLength(20);
    expect(first.jobs[0].id).toBe(ids[20]);

    const page = json(await get(h, a.key, '/api/jobs?limit=5&offset=18'));
    expect(page).toMatchObject({ total: 21, limit: 5, offset: 18 });
    expect(page.jobs.map((j: { id: string }) => j.id)).toEqual([ids[2], ids[1], ids[0]]);

    const all = json(await get(h, a.key, '/api/jobs?limit=100'));
    expect(all.jobs.map((j: { id: string }) => j.id)).toEqual([...ids].reverse());

    const onlyCancelled = json(await get(h, a.key, '/api/jobs?status=cancelled'));
    expect(onlyCancelled).toMatchObject({ total: 1, jobs: [{ id: cancelled, status: 'cancelled' }] });
    const queued = json(await get(h, a.key, '/api/jobs?status=queued&limit=1'));
    expect(queued.total).toBe(20);
    expect(queued.jobs).toHaveLength(1);
    expect(json(await get(h, a.key, '/api/jobs?offset=50'))).toMatchObject({ total: 21, jobs: [] });
  });

  it('download answers 302 to a presigned URL that plain fetch reads, equal to the stored result, for all and found', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 100 });
    const base = await listen(h);
    const job = json(await uploadCsv(h, a.key, CSV));

    const early = await get(h, a.key, `/api/jobs/${job.id}/download`);
    expect(early.statusCode).toBe(409);
    expectNoLeak(early.body);

    await runUntilDone(h, [job.id]);
    for (const filter of ['all', 'found'] as const) {
      const response = await fetch(`${base}/api/jobs/${job.id}/download?filter=${filter}`, { headers: bearer(a.key), redirect: 'manual' });
      expect(response.status).toBe(302);
      expect(response.headers.get('cache-control')).toBe('no-store');
      const location = response.headers.get('location')!;
      expect(location).toMatch(/^https?:\/\//);
      expect(location).not.toContain(a.key);

      const file = await fetch(location);
      expect(file.status).toBe(200);
      const text = await file.text();
      const stored = (await streamToBuffer(await h.engine.jobService.openResult(job.id, filter))).toString('utf8');
      expect(text).toBe(stored);
      const records = await resultRecords(text);
      expect(records.length).toBe(filter === 'all' ? 5 : json(await get(h, a.key, `/api/jobs/${job.id}`)).rows.found);
    }
    // Without a filter, the download is the whole result.
    const plain = await get(h, a.key, `/api/jobs/${job.id}/download`);
    expect(plain.statusCode).toBe(302);
    expect(plain.headers.location).toContain('all.csv');
  });

  it('cancels a queued job, which then never runs or charges', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 100 });
    const job = json(await uploadCsv(h, a.key, CSV));

    const cancel = await h.app.inject({ method: 'POST', url: `/api/jobs/${job.id}/cancel`, headers: bearer(a.key) });
    expect(cancel.statusCode).toBe(200);
    expect(json(cancel)).toMatchObject({ id: job.id, status: 'cancelled' });
    // Asking again is harmless.
    expect(json(await h.app.inject({ method: 'POST', url: `/api/jobs/${job.id}/cancel`, headers: bearer(a.key) }))).toMatchObject({ status: 'cancelled' });

    const other = json(await uploadCsv(h, a.key, 'email\nlucia@example.com\n'));
    await runUntilDone(h, [other.id]);
    expect(json(await get(h, a.key, `/api/jobs/${job.id}`))).toMatchObject({ status: 'cancelled', credits_used: 0, rows: { processed: 0 } });
    expect(await h.engine.deps.billing.chargeCountForJob(job.id)).toBe(0);
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(99);
  });

  it('another account\'s job is 404 for get, download and cancel, and absent from its list', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 100 });
    const b = await newAccount(h, { credits: 100 });
    const job = json(await uploadCsv(h, a.key, CSV));
    await runUntilDone(h, [job.id]);

    const answers = [
      await get(h, b.key, `/api/jobs/${job.id}`),
      await get(h, b.key, `/api/jobs/${job.id}/download?filter=all`),
      await h.app.inject({ method: 'POST', url: `/api/jobs/${job.id}/cancel`, headers: bearer(b.key) }),
    ];
    for (const r of answers) {
      expect(r.statusCode).toBe(404);
      expect(json(r).error).toBe('Job not found');
      expect(r.headers.location).toBeUndefined();
    }
    expect(json(await get(h, b.key, '/api/jobs'))).toMatchObject({ total: 0, jobs: [] });
    expect(json(await get(h, a.key, `/api/jobs/${job.id}`)).status).toBe('completed');
  });

  it('a readonly key may read jobs but not upload or cancel', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 100 });
    const ro = await h.app.inject({ method: 'POST', url: '/api/account/keys', headers: bearer(a.key), payload: { name: 'ro', role: 'readonly' } });
    const readonlyKey = json(ro).key as string;
    const job = json(await uploadCsv(h, a.key, CSV));

    expect((await get(h, readonlyKey, `/api/jobs/${job.id}`)).statusCode).toBe(200);
    expect((await uploadCsv(h, readonlyKey, CSV)).statusCode).toBe(403);
    expect((await h.app.inject({ method: 'POST', url: `/api/jobs/${job.id}/cancel`, headers: bearer(readonlyKey) })).statusCode).toBe(403);
    expect(await jobCount(h, a.id)).toBe(1);
  });
});

describe('limits on uploads', () => {
  it('balance 0: 402 at once, before the file is read, with nothing staged', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 0 });
    const base = await listen(h);

    // A body that starts and then never ends: the answer must not wait for it.
    const body = new PassThrough();
    const boundary = 'stall';
    body.write(`${partHead(boundary, { name: 'type' })}gender\r\n${partHead(boundary, { name: 'file', filename: 'big.csv' })}email\n`);
    body.write('maria@example.com\n'.repeat(1000));
    const started = Date.now();
    const response = await request(`${base}/api/jobs/bulk`, {
      method: 'POST',
      headers: { ...bearer(a.key), 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
      headersTimeout: 5_000,
    });
    const text = await response.body.text();
    body.destroy();
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(response.statusCode).toBe(402);
    expect(JSON.parse(text).error).toBe('Insufficient credits. Please top up your account.');
    expect(await jobCount(h, a.id)).toBe(0);
    expect(storedObjects(h, 'inputs/')).toEqual([]);
  });

  it('413 for a file over SLUICE_MAX_UPLOAD_BYTES: no job, nothing staged, nothing charged; a file under it is fine', async () => {
    const h = await openApiHarness({ SLUICE_MAX_UPLOAD_BYTES: '1024' });
    const a = await newAccount(h, { credits: 100 });
    const big = `email\n${'abcdefghij@example.com\n'.repeat(100)}`;
    expect(Buffer.byteLength(big)).toBeGreaterThan(2048);

    const refused = await uploadCsv(h, a.key, big);
    expect(refused.statusCode).toBe(413);
    expectNoLeak(refused.body);
    expect(json(refused).error).toEqual(expect.any(String));
    expect(await jobCount(h, a.id)).toBe(0);
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(100);
    expect(storedObjects(h, 'inputs/')).toEqual([]);

    const small = await uploadCsv(h, a.key, `email\n${'abcdefghij@example.com\n'.repeat(40)}`);
    expect(small.statusCode).toBe(202);
  });

  it('413 over a real socket too, for a streamed body far over the limit', async () => {
    const h = await openApiHarness({ SLUICE_MAX_UPLOAD_BYTES: '4096' });
    const a = await newAccount(h, { credits: 100 });
    const base = await listen(h);
    const boundary = 'big';
    const chunk = Buffer.from('abcdefghij@example.com\n'.repeat(1000));
    async function* stream() {
      yield Buffer.from(`${partHead(boundary, { name: 'type' })}gender\r\n${partHead(boundary, { name: 'file', filename: 'big.csv' })}email\n`);
      for (let i = 0; i < 200; i++) yield chunk; // ~4.6 MB
      yield Buffer.from(`\r\n--${boundary}--\r\n`);
    }
    const response = await request(`${base}/api/jobs/bulk`, {
      method: 'POST',
      headers: { ...bearer(a.key), 'content-type': `multipart/form-data; boundary=${boundary}` },
      body: Readable.from(stream()),
    }).catch((e: unknown) => e as Error);
    // Either the server answered 413, or it answered and closed the socket mid-upload.
    if (!(response instanceof Error)) {
      expect(response.statusCode).toBe(413);
      await response.body.text();
    }
    expect(await jobCount(h, a.id)).toBe(0);
    expect(storedObjects(h, 'inputs/')).toEqual([]);
  });

  it('a file over SLUICE_MAX_ROWS fails with too_many_rows before any charge', async () => {
    const h = await openApiHarness({ SLUICE_MAX_ROWS: '5' });
    const a = await newAccount(h, { credits: 100 });
    const rows = Array.from({ length: 10 }, (_, i) => `person${i}@example.com`).join('\n');
    const upload = await uploadCsv(h, a.key, `email\n${rows}\n`);
    expect(upload.statusCode).toBe(202);
    await runUntilDone(h, [json(upload).id]);

    const job = json(await get(h, a.key, `/api/jobs/${json(upload).id}`));
    expect(job).toMatchObject({ status: 'failed', reason: 'too_many_rows', credits_used: 0 });
    expect(job.downloads).toBeNull();
    expectNoLeak(JSON.stringify(job));
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(100);
    expect(await h.engine.deps.billing.chargeCountForJob(job.id)).toBe(0);
  });
});

describe('Idempotency-Key', () => {
  it('the same key with the same request gives the same job, and only one job exists', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 100 });
    const first = await uploadCsv(h, a.key, CSV, { idempotencyKey: 'order-1' });
    const again = await uploadCsv(h, a.key, CSV, { idempotencyKey: 'order-1' });
    expect(first.statusCode).toBe(202);
    expect(again.statusCode).toBe(202);
    expect(json(again).id).toBe(json(first).id);
    expect(await jobCount(h, a.id)).toBe(1);
    expect(storedObjects(h, 'inputs/')).toHaveLength(1);

    // The key is per account: another account's identical request is its own job.
    const b = await newAccount(h, { credits: 100 });
    const other = await uploadCsv(h, b.key, CSV, { idempotencyKey: 'order-1' });
    expect(other.statusCode).toBe(202);
    expect(json(other).id).not.toBe(json(first).id);
  });

  it('the same key with a different file, type option or column is 422 and makes nothing', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 100 });
    const first = json(await uploadCsv(h, a.key, CSV, { idempotencyKey: 'order-2' }));

    const differentFile = await uploadCsv(h, a.key, `${CSV}\n6,lucia@example.com,Lucia`, { idempotencyKey: 'order-2' });
    const differentOption = await uploadCsv(h, a.key, CSV, { idempotencyKey: 'order-2', downloadLink: 'true' });
    const differentColumn = await uploadCsv(h, a.key, CSV, { idempotencyKey: 'order-2', column: 'email' });
    for (const r of [differentFile, differentOption, differentColumn]) {
      expect(r.statusCode).toBe(422);
      expect(json(r).error).toEqual(expect.any(String));
      expectNoLeak(r.body);
    }
    expect(await jobCount(h, a.id)).toBe(1);
    expect(storedObjects(h, 'inputs/')).toHaveLength(1);
    // And the original still replays.
    expect(json(await uploadCsv(h, a.key, CSV, { idempotencyKey: 'order-2' })).id).toBe(first.id);
  });

  it('a request refused before it made a job does not use up its key', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 100 });
    const refused = await uploadCsv(h, a.key, CSV, { idempotencyKey: 'order-3', downloadLink: 'perhaps' });
    expect(refused.statusCode).toBe(422);
    const retry = await uploadCsv(h, a.key, CSV, { idempotencyKey: 'order-3' });
    expect(retry.statusCode).toBe(202);
    expect(await jobCount(h, a.id)).toBe(1);
  });

  it('a retry after the job spent the whole balance still gets the original job, not 402', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 3 });
    const first = json(await uploadCsv(h, a.key, CSV, { idempotencyKey: 'order-4' }));
    await runUntilDone(h, [first.id]);
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(0);

    const retry = await uploadCsv(h, a.key, CSV, { idempotencyKey: 'order-4' });
    expect(retry.statusCode).toBe(202);
    expect(json(retry).id).toBe(first.id);
  });

  it('while the first request is still uploading, a second with the same key is 409; the first then completes', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 100 });
    const base = await listen(h);
    const boundary = 'slow';
    const fields = `${partHead(boundary, { name: 'type' })}gender\r\n`;
    const fileHead = partHead(boundary, { name: 'file', filename: 'slow.csv' });
    const csvBody = CSV;

    // The first request's claim, watched through the store's own call: it is committed once the call resolves.
    const claims = vi.spyOn(h.deps.idempotency, 'claim');
    // The first request sends its fields and half its file, then waits.
    const body = new PassThrough();
    body.write(fields + fileHead + csvBody.slice(0, 40));
    const first = request(`${base}/api/jobs/bulk`, {
      method: 'POST',
      headers: { ...bearer(a.key), 'content-type': `multipart/form-data; boundary=${boundary}`, 'idempotency-key': 'order-5' },
      body,
    });
    const deadline = Date.now() + 5_000;
    while (claims.mock.results.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(claims.mock.results).toHaveLength(1);
    expect(await claims.mock.results[0]!.value).toEqual({ state: 'new' });

    const second = await uploadCsv(h, a.key, CSV, { idempotencyKey: 'order-5' });
    expect(second.statusCode).toBe(409);
    expect(json(second).error).toEqual(expect.any(String));
    expect(await jobCount(h, a.id)).toBe(0);

    body.end(`${csvBody.slice(40)}\r\n--${boundary}--\r\n`);
    const firstResponse = await first;
    const firstText = await firstResponse.body.text();
    expect({ status: firstResponse.statusCode, body: firstText }).toMatchObject({ status: 202 });
    const firstJob = JSON.parse(firstText);

    const third = await uploadCsv(h, a.key, CSV, { idempotencyKey: 'order-5' });
    expect(third.statusCode).toBe(202);
    expect(json(third).id).toBe(firstJob.id);
    expect(await jobCount(h, a.id)).toBe(1);
  });
});
