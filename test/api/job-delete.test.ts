import { afterEach, describe, expect, it } from 'vitest';
import { addKey, bearer, closeHarnesses, json, newAccount, openApiHarness, runUntilDone, storedObjects, uploadCsv, type ApiHarness } from '../support/api-harness.js';
import { storeEnv, TEST_STORES } from '../support/test-engine.js';

const drops: (() => Promise<void>)[] = [];
afterEach(async () => {
  await closeHarnesses();
  await Promise.all(drops.splice(0).map((drop) => drop()));
});

const CSV = ['email', 'maria.rossi@example.com', 'john.smith@example.com', 'not-an-email', 'info@example.com'].join('\n');

/** Every object the job owns, as the embedded S3 server holds them on disk. */
function objectsOf(h: ApiHarness, jobId: string): string[] {
  return [...storedObjects(h, `inputs/${jobId}.`), ...storedObjects(h, `jobs/${jobId}/`), ...storedObjects(h, `results/${jobId}/`)].sort();
}

function call(h: ApiHarness, key: string, method: 'GET' | 'DELETE' | 'POST', url: string) {
  return h.app.inject({ method, url, headers: bearer(key) });
}

describe.each(TEST_STORES)('DELETE /api/jobs/{id} on %s', (store) => {
  async function harness(): Promise<ApiHarness> {
    const placed = await storeEnv(store);
    drops.push(placed.drop);
    return openApiHarness(placed.env);
  }

  async function completedJob(h: ApiHarness, key: string): Promise<string> {
    const upload = await uploadCsv(h, key, CSV);
    expect(upload.statusCode).toBe(202);
    const id = json(upload).id as string;
    await runUntilDone(h, [id]);
    return id;
  }

  it('removes the job\'s input, chunks, parts and results, keeps its ledger lines and record, and refuses its reads and downloads with 410', async () => {
    const h = await harness();
    const a = await newAccount(h, { credits: 100 });
    const id = await completedJob(h, a.key);
    const other = await completedJob(h, a.key);
    // Intermediates a failed clean-up of the assembly left behind are the job's too.
    await h.engine.deps.objects.putBytes(`jobs/${id}/chunks/00000.jsonl`, '{}');
    await h.engine.deps.objects.putBytes(`jobs/${id}/parts/00000.all.csv`, 'x');
    expect(objectsOf(h, id)).toEqual(
      expect.arrayContaining([`inputs/${id}.csv`, `jobs/${id}/chunks/00000.jsonl`, `jobs/${id}/parts/00000.all.csv`, `results/${id}/all.csv`, `results/${id}/found.csv`]),
    );
    const otherObjects = objectsOf(h, other);
    const ledger = await h.engine.deps.billing.ledger(a.id);
    const charged = await h.engine.deps.billing.chargeCountForJob(id);
    expect(charged).toBeGreaterThan(0);

    const deleted = await call(h, a.key, 'DELETE', `/api/jobs/${id}`);
    expect(deleted.statusCode).toBe(200);
    const body = json(deleted);
    expect(body).toEqual({ id, status: 'completed', deleted_at: expect.any(String), deleted_reason: 'requested', files_deleted: true });

    expect(objectsOf(h, id)).toEqual([]);
    expect(objectsOf(h, other)).toEqual(otherObjects);
    expect(await h.engine.deps.billing.ledger(a.id)).toEqual(ledger);
    expect(await h.engine.deps.billing.chargeCountForJob(id)).toBe(charged);
    expect((await h.engine.deps.jobs.require(id)).status).toBe('completed');

    for (const url of [`/api/jobs/${id}`, `/api/jobs/${id}/download`, `/api/jobs/${id}/download?filter=found`]) {
      const refused = await call(h, a.key, 'GET', url);
      expect(refused.statusCode, url).toBe(410);
      expect(json(refused)).toMatchObject({ code: 'job_deleted', error: expect.stringContaining('its charges stay in the ledger') });
    }
    expect((await call(h, a.key, 'POST', `/api/jobs/${id}/retry-failed`)).statusCode).toBe(410);
    expect((await call(h, a.key, 'GET', `/api/jobs/${other}/download`)).statusCode).toBe(302);

    const again = await call(h, a.key, 'DELETE', `/api/jobs/${id}`);
    expect(again.statusCode).toBe(200);
    expect(json(again)).toEqual(body);

    const audit = json(await call(h, a.key, 'GET', '/api/account/audit')).entries as { action: string; target_id: string; actor: { type: string } }[];
    expect(audit.filter((e) => e.action === 'job.deleted')).toEqual([expect.objectContaining({ target_id: id, actor: expect.objectContaining({ type: 'key' }) })]);
  });

  it('refuses a job that has not finished with 409 invalid_state, saying to cancel it first, and deletes it once cancelled', async () => {
    const h = await harness();
    const a = await newAccount(h, { credits: 100 });
    const id = json(await uploadCsv(h, a.key, CSV)).id as string;

    const refused = await call(h, a.key, 'DELETE', `/api/jobs/${id}`);
    expect(refused.statusCode).toBe(409);
    expect(json(refused)).toMatchObject({ code: 'invalid_state', error: expect.stringContaining('cancel it first') });
    expect(objectsOf(h, id)).toEqual([`inputs/${id}.csv`]);
    expect((await call(h, a.key, 'GET', `/api/jobs/${id}`)).statusCode).toBe(200);

    expect((await call(h, a.key, 'POST', `/api/jobs/${id}/cancel`)).statusCode).toBe(200);
    expect((await call(h, a.key, 'DELETE', `/api/jobs/${id}`)).statusCode).toBe(200);
    expect(objectsOf(h, id)).toEqual([]);
  });

  it('refuses a read-only key with 403 and answers 404 for another account\'s job, deleting nothing', async () => {
    const h = await harness();
    const a = await newAccount(h, { credits: 100 });
    const b = await newAccount(h, { credits: 100 });
    const readonly = await addKey(h, a.id, 'readonly', 'reader');
    const id = await completedJob(h, a.key);
    const before = objectsOf(h, id);

    expect((await call(h, readonly.key, 'DELETE', `/api/jobs/${id}`)).statusCode).toBe(403);
    const foreign = await call(h, b.key, 'DELETE', `/api/jobs/${id}`);
    expect(foreign.statusCode).toBe(404);
    expect(json(foreign)).toMatchObject({ code: 'job_not_found' });
    expect(objectsOf(h, id)).toEqual(before);
    expect(await h.engine.deps.store.retention.deletion(id)).toBeUndefined();
  });

  it('answers 410 for a deleted phone job instead of presigning links to files that are gone', async () => {
    const h = await harness();
    const a = await newAccount(h, { credits: 100 });
    const created = await h.app.inject({ method: 'POST', url: '/api/phone-jobs', headers: bearer(a.key), payload: { feature: 'breaches', numbers: ['+4915124914946'], default_country: 'DE' } });
    expect(created.statusCode).toBe(202);
    const id = json(created).id as string;
    await runUntilDone(h, [id]);
    expect(json(await call(h, a.key, 'GET', `/api/phone-jobs?id=${id}`)).download_urls).toBeDefined();

    expect((await call(h, a.key, 'DELETE', `/api/jobs/${id}`)).statusCode).toBe(200);
    const refused = await call(h, a.key, 'GET', `/api/phone-jobs?id=${id}`);
    expect(refused.statusCode).toBe(410);
    expect(json(refused)).toMatchObject({ code: 'job_deleted' });
  });
});
