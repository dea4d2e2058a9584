import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runJob } from '../../src/cli/run-command.js';
import { closeHarnesses, json, newAccount, openApiHarness, runUntilDone, uploadCsv } from '../support/api-harness.js';
import { parseCsv, resultRecords } from '../support/csv-fixture.js';
import { engineScope, TEST_STORES, tempDir, type TestEngine } from '../support/test-engine.js';

/**
 * Issue 19, items 3 and 4: an Outlook-style export, its key column named `E-mail Address` and its
 * cells written as mail clients write them. The original cells come back unchanged; dedupe and
 * billing see one address however it was written.
 */
const EXPORT = [
  'First Name,E-mail Address,Notes',
  'Jane,Jane Doe <jane.doe@example.com>,a',
  'John,"""John Smith"" <John.Smith@Example.com>",b',
  'Jane again,mailto:JANE.DOE@example.com?subject=Hi,c',
  'Maria,\u00a0“maria.rossi@example.com”\u200b,d',
  'Two,"ann@example.com, bob@example.com",e',
  'Broken,Jane Doe <jane.doe@example.com,f',
  'Jane plain,jane.doe@example.com,g',
].join('\r\n');

const EXPECTED = [
  // [email cell as written, status, credits, error]
  ['Jane Doe <jane.doe@example.com>', 'ok', '1', ''],
  ['"John Smith" <John.Smith@Example.com>', 'ok', '1', ''],
  ['mailto:JANE.DOE@example.com?subject=Hi', 'duplicate', '0', ''],
  ['\u00a0“maria.rossi@example.com”\u200b', 'ok', '1', ''],
  ['ann@example.com, bob@example.com', 'invalid', '0', 'multiple_addresses'],
  ['Jane Doe <jane.doe@example.com', 'invalid', '0', 'invalid_email'],
  ['jane.doe@example.com', 'duplicate', '0', ''],
];

describe.each(TEST_STORES)('key columns by their usual names, on %s', (store) => {
  const engines = engineScope(store);
  afterEach(() => engines.closeAll());
  const engine = (): Promise<TestEngine> => engines.open();

  async function run(e: TestEngine, content: string, options: { type?: string; column?: string; lookups?: string[] } = {}) {
    const dir = tempDir();
    const file = path.join(dir, 'in.csv');
    fs.writeFileSync(file, content);
    const account = await e.deps.billing.createAccount({ credits: 100, now: Date.now() });
    const result = await runJob(e, { file, accountId: account.id, outDir: path.join(dir, 'out'), ...options });
    return { ...result, balance: (await e.deps.billing.requireAccount(account.id)).credits };
  }

  it('an E-mail Address column of name-and-address cells: the right rows, the cells written back, each address charged once', async () => {
    const e = await engine();
    const result = await run(e, EXPORT);
    expect(result.summary.status).toBe('completed');
    const rows = await parseCsv(fs.readFileSync(result.files.all!));
    expect(rows[0]).toEqual(['First Name', 'E-mail Address', 'Notes', 'gender', 'country', 'probability', 'status', 'credits', 'cached', 'error']);
    const records = await resultRecords(fs.readFileSync(result.files.all!));
    expect(records.map((r) => [r['E-mail Address'], r.status, r.credits, r.error])).toEqual(EXPECTED);
    expect(records.map((r) => r['First Name'])).toEqual(['Jane', 'John', 'Jane again', 'Maria', 'Two', 'Broken', 'Jane plain']);
    expect(records.filter((r) => r.status === 'ok').map((r) => r.gender)).toEqual(['female', 'male', 'female']);
    expect(result.summary.credits_used).toBe(3);
    expect(result.balance).toBe(97);
    expect(await e.deps.billing.chargeCountForJob(result.summary.id)).toBe(3);
  });

  it('two columns of one rank fail with ambiguous_column naming both, and charge nothing; --column chooses', async () => {
    const e = await engine();
    const content = 'Name,Work Email,Personal Email\nJane,jane.doe@example.com,jd@example.org\n';
    const refused = await run(e, content);
    expect(refused.summary).toMatchObject({ status: 'failed', reason: 'ambiguous_column', credits_used: 0 });
    expect(refused.summary.error_message).toContain('"Work Email" (column 2) and "Personal Email" (column 3)');
    expect(refused.summary.error_message).toContain('--column "Work Email"');
    expect(refused.balance).toBe(100);
    expect(await e.deps.billing.chargeCountForJob(refused.summary.id)).toBe(0);

    const chosen = await run(e, content, { column: 'personal-email' });
    expect(chosen.summary).toMatchObject({ status: 'completed', credits_used: 1 });
    expect((await resultRecords(fs.readFileSync(chosen.files.all!)))[0]).toMatchObject({ 'Personal Email': 'jd@example.org', status: 'ok' });
  });

  it('a file with no key column fails with no_key_column, its message listing the header it saw', async () => {
    const e = await engine();
    const refused = await run(e, 'id,Adresse,Telefon\n1,Hauptstr. 1,+49 30 901820\n');
    expect(refused.summary).toMatchObject({ status: 'failed', reason: 'no_key_column', credits_used: 0 });
    expect(refused.summary.error_message).toContain('["id", "Adresse", "Telefon"]');
    expect(refused.summary.error_message).toContain('--column NAME');
  });

  it('a job of several lookups finds each key column by its aliases', async () => {
    const e = await engine();
    const result = await run(e, 'Organisation,Mobile,E-mail Address\nAcme,+49 30 901820,Jane <jane.doe@example.com>\n', { type: 'gender,company' });
    expect(result.summary.status).toBe('completed');
    const [record] = await resultRecords(fs.readFileSync(result.files.all!));
    expect(record).toMatchObject({ Organisation: 'Acme', 'E-mail Address': 'Jane <jane.doe@example.com>', gender: 'female' });
  });
});

describe('the same file through POST /api/jobs/bulk', () => {
  afterEach(() => closeHarnesses());

  it('gives the same rows and charges the same', async () => {
    const h = await openApiHarness();
    const account = await newAccount(h, { credits: 100 });
    const upload = await uploadCsv(h, account.key, EXPORT);
    expect(upload.statusCode, upload.body).toBe(202);
    const id = json(upload).id as string;
    await runUntilDone(h, [id]);
    const job = json(await h.app.inject({ method: 'GET', url: `/api/jobs/${id}`, headers: { authorization: `Bearer ${account.key}` } }));
    expect(job).toMatchObject({ status: 'completed', credits_used: 3 });
    const chunks: Buffer[] = [];
    for await (const chunk of await h.engine.jobService.openResult(id, 'all')) chunks.push(chunk as Buffer);
    const records = await resultRecords(Buffer.concat(chunks));
    expect(records.map((r) => [r['E-mail Address'], r.status, r.credits, r.error])).toEqual(EXPECTED);
  });
});
