import { afterEach, describe, expect, it } from 'vitest';
import { bearer, closeHarnesses, openStoreHarness, json, newAccount, runUntilDone, runUntilStatus, uploadCsv, type ApiHarness } from '../support/api-harness.js';
import { resultText, TEST_STORES } from '../support/test-engine.js';
import type { StoreKind } from '../../src/storage/store.js';

afterEach(closeHarnesses);

const harness = (store: StoreKind): Promise<ApiHarness> => openStoreHarness(store, { SLUICE_CHUNK_ROWS: '20', SLUICE_BATCH_ROWS: '5' });

// 60 distinct emails: three chunks of 20, batches of 5.
const CSV = `email\n${Array.from({ length: 60 }, (_, i) => `person${i}@example.com`).join('\n')}\n`;

function download(h: ApiHarness, key: string, id: string, query: string) {
  return h.app.inject({ method: 'GET', url: `/api/jobs/${id}/download?${query}`, headers: bearer(key) });
}

describe.each(TEST_STORES)('partial downloads on %s', (store) => {
  it('a job paused for credits mid-way, then cancelled, gives exactly its committed rows, marked partial', async () => {
    const h = await harness(store);
    const rich = await newAccount(h, { credits: 100 });
    const full = json(await uploadCsv(h, rich.key, CSV)).id as string;
    await runUntilDone(h, [full]);
    const complete = await resultText(h.engine, full, 'all');

    // 23 credits: batches of 5 commit 20 rows, then the balance pays for 3 more of the next batch.
    const poor = await newAccount(h, { credits: 23 });
    const id = json(await uploadCsv(h, poor.key, CSV)).id as string;
    await runUntilStatus(h, id, 'paused');
    const paused = await h.engine.deps.jobs.require(id);
    expect(paused.status).toBe('paused');
    const committed = paused.processedRows;
    expect(committed).toBeGreaterThan(0);
    expect(committed).toBeLessThan(60);

    // Without asking, still 409: a partial file is never handed out by mistake.
    expect((await download(h, poor.key, id, 'filter=all')).statusCode).toBe(409);

    for (const status of ['paused', 'cancelled']) {
      if (status === 'cancelled') await h.app.inject({ method: 'POST', url: `/api/jobs/${id}/cancel`, headers: bearer(poor.key) });
      const partial = await download(h, poor.key, id, 'filter=all&partial=true');
      expect(partial.statusCode, partial.body).toBe(200);
      expect(partial.headers['x-sluice-partial']).toBe('true');
      expect(partial.headers['x-sluice-rows-included']).toBe(String(committed));
      expect(partial.headers['x-sluice-rows-total']).toBe('60');
      expect(partial.headers['content-disposition']).toBe(`attachment; filename="${id}-all.partial.csv"`);
      const lines = complete.split('\n');
      // Byte-identical to the header and the first N rows of the uninterrupted run.
      expect(partial.body).toBe(`${lines.slice(0, committed + 1).join('\n')}\n`);
    }
    const found = await download(h, poor.key, id, 'filter=found&partial=true');
    expect(found.headers['content-disposition']).toBe(`attachment; filename="${id}-found.partial.csv"`);
    expect(found.body.split('\n')[0]).toBe(complete.split('\n')[0]);
  });

  it('a completed job with partial=true gives the complete file; a queued one 409; a deleted one 410', async () => {
    const h = await harness(store);
    const a = await newAccount(h, { credits: 100 });
    const queued = json(await uploadCsv(h, a.key, CSV)).id as string;
    const early = await download(h, a.key, queued, 'partial=true');
    expect([early.statusCode, json(early).code]).toEqual([409, 'invalid_state']);
    await runUntilDone(h, [queued]);
    const done = await download(h, a.key, queued, 'partial=true');
    expect(done.statusCode).toBe(302);
    expect(done.headers['x-sluice-partial']).toBe('false');
    expect(done.headers.location).toContain('all.csv');
    expect((await h.app.inject({ method: 'DELETE', url: `/api/jobs/${queued}`, headers: bearer(a.key) })).statusCode).toBeLessThan(300);
    expect((await download(h, a.key, queued, 'partial=true')).statusCode).toBe(410);
  });
});
