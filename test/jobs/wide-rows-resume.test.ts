import { afterEach, describe, expect, it, vi } from 'vitest';
import { Worker } from '../../src/jobs/worker.js';
import { ERROR_CODES } from '../../src/shared/errors.js';
import { closeHarnesses, json, newAccount, openApiHarness, runUntilDone, streamToBuffer, uploadCsv, type ApiHarness } from '../support/api-harness.js';
import { removeScratchDirs, scratchDir } from '../support/cli-process.js';
import { parseCsv } from '../support/csv-fixture.js';
import { TEST_SEAL_KEY } from '../support/test-engine.js';

afterEach(async () => {
  await closeHarnesses();
  removeScratchDirs();
});

/** Rows of 400 cells (about 5 KB of chunk data each), every seventh of 1,200 cells, some addresses repeated. */
const ROWS = 120;
// One seal key for the reference and the resumed run: keys paid for are compared by their billing-cache names, keyed by it.
const ENV = { SLUICE_BATCH_BYTES: String(16 * 1024), SLUICE_CHUNK_BYTES: String(64 * 1024), SLUICE_MAX_CELLS_PER_ROW: '1000', SLUICE_SEAL_KEY: TEST_SEAL_KEY };
const header = ['email', ...Array.from({ length: 399 }, (_, c) => `c${c + 2}`)];
const rows = Array.from({ length: ROWS }, (_, i) => [`person${i % 97}@example.com`, ...Array.from({ length: (i % 7 === 6 ? 1_200 : 400) - 1 }, (_, c) => `w${(i * c) % 10}xxxxxx`)]);
const INPUT = [header, ...rows].map((r) => r.join(',')).join('\n') + '\n';

async function submit(h: ApiHarness) {
  const account = await newAccount(h, { credits: 1_000 });
  const upload = await uploadCsv(h, account.key, INPUT);
  expect(upload.statusCode, upload.body).toBe(202);
  return { account, id: json(upload).id as string };
}

/** The job's `all` file and what it cost: keys, and the ledger's charge lines (one per batch that charged; chunks may finish in another order). */
async function outcome(h: ApiHarness, accountId: string, id: string) {
  const billing = h.engine.deps.billing;
  const charges = (await billing.ledger(accountId)).filter((l) => l.reason === 'charge');
  return {
    status: (await h.engine.deps.jobs.require(id)).status,
    all: (await streamToBuffer(await h.engine.jobService.openResult(id, 'all'))).toString('utf8'),
    keys: [...(await billing.chargedKeys(accountId, id))].sort(),
    chargeLines: charges.map((l) => l.delta).sort(),
  };
}

describe('a job of wide rows, batched by bytes', () => {
  it('stopped between batches and resumed, ends with the same files and the same charge lines as an uninterrupted run', async () => {
    const reference = await openApiHarness({ ...ENV, SLUICE_DATA_DIR: scratchDir('sluice-wide-') });
    const clean = await submit(reference);
    await runUntilDone(reference, [clean.id]);
    const expected = await outcome(reference, clean.account.id, clean.id);
    expect(expected.status).toBe('completed');
    const [, ...result] = await parseCsv(Buffer.from(expected.all));
    expect(result.filter((r) => r.at(-1) === ERROR_CODES.rowTooWide)).toHaveLength(rows.filter((r) => r.length > 1_000).length);
    expect(expected.chargeLines.length).toBeGreaterThan(10);

    const h = await openApiHarness({ ...ENV, SLUICE_DATA_DIR: scratchDir('sluice-wide-') });
    const job = await submit(h);
    // Stop twice, each time mid-chunk after a few batches: the chunk resumes from its cursor.
    for (const after of [4, 9]) {
      const worker = new Worker(h.engine.deps);
      let commits = 0;
      const commit = h.engine.deps.jobs.commitBatch.bind(h.engine.deps.jobs);
      const spy = vi.spyOn(h.engine.deps.jobs, 'commitBatch').mockImplementation(async (input) => {
        const committed = await commit(input);
        if (++commits === after) worker.stop();
        return committed;
      });
      await worker.run({ concurrency: 1 });
      spy.mockRestore();
      const chunks = await h.engine.deps.jobs.chunks(job.id);
      expect(chunks.some((c) => c.cursor > 0 && c.cursor < c.passRows)).toBe(true);
    }
    await runUntilDone(h, [job.id]);
    expect(await outcome(h, job.account.id, job.id)).toEqual(expected);
  }, 60_000);
});
