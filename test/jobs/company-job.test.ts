import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { importCommand, importCompanies } from '../../src/cli/import-command.js';
import { runJob } from '../../src/cli/run-command.js';
import { nameKey } from '../../src/lookups/company/company-names.js';
import { EmbeddedCompanyDirectory } from '../../src/lookups/company/embedded-company-directory.js';
import { isAppError } from '../../src/shared/errors.js';
import { openDatabase } from '../../src/storage/sqlite/open-database.js';
import { COMPANY_KEYS, STORE_KINDS } from '../../src/storage/store.js';
import { bearer, closeHarnesses, json, multipart, newAccount, openApiHarness, runUntilDone } from '../support/api-harness.js';
import { resultRecords } from '../support/csv-fixture.js';
import { engineScope, TEST_STORES, writeFile, type TestEngine } from '../support/test-engine.js';
import { captureIo } from '../support/capture-io.js';

const DIRECTORY = [
  'Name,Domain,Description,Industry,Employee Count,Country,Website,Ticker',
  'Acme,https://www.acme.com/,Anvils and rockets,Manufacturing,"1,200",US,https://acme.com,ACME',
  'Acme Labs,acmelabs.io,Research,Research,40,US,,',
  'Globex Corporation,globex.com,Everything,Conglomerate,50000,US,https://globex.com,GBX',
  'Initech,,Software,Software,300,US,,',
  'Umbrella Holdings,umbrella.example,Pharma,Pharma,,GB,,',
  ',nameless.com,,,,,,',
  'Bad Domain,not a domain,,,,,,',
  'Many,many.com,,,lots,,,',
].join('\n');

/**
 * exact name, domain (URL), near name (legal form), typo, missing word, parent domain, nothing, a
 * repeat, a blank. The typo in a short name and the missing word score under the threshold: not found.
 */
const INPUT = ['id,company', '1,Acme', '2,https://www.acme.com/about', '3,"ACME, Inc."', '4,Globx', '5,Umbrella', '6,shop.globex.com', '7,Nonexistent Widgets', '8,acme', '9,'].join('\n');

/** Every name, valid or not, that DIRECTORY and the corrections below give a company. */
const NAMES = ['Acme', 'Acme Labs', 'Acme Research', 'Globex Corporation', 'Initech', 'Umbrella Holdings', 'Bad Domain', 'Many'];

/** The names of the stored companies that any of NAMES finds by name key, sorted: a repeat would show twice. */
async function storedNames(e: TestEngine): Promise<string[]> {
  const groups = await e.deps.store.companies.byKey(COMPANY_KEYS.name, NAMES.map(nameKey));
  return [...groups.values()].flat().map((c) => c.name).sort();
}

/**
 * FTS5's own check that an external-content index matches its table: it throws if not. SQLite
 * only, through the file, since the port has no such operation: PostgreSQL's indexes are on the
 * table itself and cannot fall out of step with it.
 */
function checkIndexes(e: TestEngine): void {
  if (e.deps.store.kind !== STORE_KINDS.sqlite) return;
  const db = openDatabase(path.join(e.dataDir, 'sluice.db'), e.config.sqlite);
  try {
    db.exec("INSERT INTO companies_words (companies_words) VALUES ('integrity-check')");
    db.exec("INSERT INTO companies_trigrams (companies_trigrams) VALUES ('integrity-check')");
  } finally {
    db.close();
  }
}

describe.each(TEST_STORES)('companies on %s', (store) => {
  const engines = engineScope(store);
  afterEach(async () => {
    // Harnesses first: their engines hold connections to databases that closeAll drops.
    await closeHarnesses();
    await engines.closeAll();
  });
  const engine = (): Promise<TestEngine> => engines.open();
  const harness = async () => openApiHarness(await engines.env());

  describe('sluice import companies', () => {
    it('stores each company once, keeps companies with bad optional cells as warnings, and a re-import changes nothing', async () => {
      const e = await engine();
      const file = writeFile(e.dataDir, 'companies.csv', DIRECTORY);
      const first = captureIo();
      expect(await importCommand(e, ['companies', file, '--json'], first.io)).toBe(0);
      expect(JSON.parse(first.stdout())).toEqual({
        file,
        rows: 8,
        imported: 7,
        updated: 0,
        unchanged: 0,
        invalid: 1,
        invalid_by_code: { empty_value: 1 },
        first_invalid: [{ row: 7, code: 'empty_value' }],
        warnings: 2,
        warnings_by_column: { domain: { invalid_domain: 1 }, employee_count: { invalid_employee_count: 1 } },
        first_warnings: [
          { row: 8, column: 'domain', code: 'invalid_domain' },
          { row: 9, column: 'employee_count', code: 'invalid_employee_count' },
        ],
      });
      const acme = await e.deps.store.companies.byKey(COMPANY_KEYS.domain, ['acme.com']);
      expect(acme.get('acme.com')).toMatchObject([{ name: 'Acme', domain: 'acme.com', employee_count: 1200, extra: '{"ticker":"ACME"}' }]);
      const many = await e.deps.store.companies.byKey(COMPANY_KEYS.domain, ['many.com']);
      expect(many.get('many.com')).toMatchObject([{ name: 'Many', employee_count: null }]);
      const stored = ['Acme', 'Acme Labs', 'Bad Domain', 'Globex Corporation', 'Initech', 'Many', 'Umbrella Holdings'];
      expect(await storedNames(e)).toEqual(stored);

      const again = await importCompanies(e.deps.store.companies, fs.createReadStream(file), { maxLineBytes: 65_536 });
      expect(again).toMatchObject({ rows: 8, imported: 0, updated: 0, unchanged: 7, invalid: 1, warnings: 2 });
      expect(await storedNames(e)).toEqual(stored);
      checkIndexes(e);
    });

    it('updates a company in place by domain, or by name without one, and keeps the search indexes in step', async () => {
      const e = await engine();
      await importCompanies(e.deps.store.companies, fs.createReadStream(writeFile(e.dataDir, 'a.csv', DIRECTORY)), { maxLineBytes: 65_536 });
      const fix = ['name,domain,industry', 'Acme Research,acmelabs.io,Research', 'INITECH,,Consulting'].join('\n');
      const summary = await importCompanies(e.deps.store.companies, fs.createReadStream(writeFile(e.dataDir, 'b.csv', fix)), { maxLineBytes: 65_536 });
      expect(summary).toMatchObject({ imported: 0, updated: 2, unchanged: 0 });
      expect(await storedNames(e)).toEqual(['Acme', 'Acme Research', 'Bad Domain', 'Globex Corporation', 'INITECH', 'Many', 'Umbrella Holdings']);
      checkIndexes(e);

      const directory = new EmbeddedCompanyDirectory(e.deps.store.companies);
      const [research, labs, initech] = await directory.lookup(['name:research acme', 'name:acme labs', 'name:initech']);
      expect(research).toMatchObject({ ok: true, result: { match: 'near', results: [{ name: 'Acme Research', domain: 'acmelabs.io' }] } });
      // The old name left both indexes: neither its words nor its trigrams find it any more.
      expect(labs).toEqual({ ok: true, result: { match: null, results: [] } });
      expect(initech).toMatchObject({ ok: true, result: { match: 'name', results: [{ name: 'INITECH', industry: 'Consulting', description: null }] } });
    });

    it('refuses a file without a name column', async () => {
      const e = await engine();
      const file = writeFile(e.dataDir, 'c.csv', 'title,domain\nAcme,acme.com\n');
      await expect(() => importCompanies(e.deps.store.companies, fs.createReadStream(file), { maxLineBytes: 65_536 })).rejects.toSatisfy((err) => isAppError(err, 'column_not_found'));
    });
  });

  describe('a company job', () => {
    it('answers exact names, domains and near names, charges each key once, and lets invalid rows, repeats and reruns go free', async () => {
      const e = await engine();
      await importCompanies(e.deps.store.companies, fs.createReadStream(writeFile(e.dataDir, 'd.csv', DIRECTORY)), { maxLineBytes: 65_536 });
      const input = writeFile(e.dataDir, 'in.csv', INPUT);
      const account = await e.deps.billing.createAccount({ credits: 100, now: Date.now() });

      const run = await runJob(e, { file: input, type: 'company', accountId: account.id, outDir: path.join(e.dataDir, 'a') });
      expect(run.summary).toMatchObject({ status: 'completed', type: 'company', credits_used: 7 });
      expect(run.summary.rows).toMatchObject({ total: 9, processed: 9, found: 5, invalid: 1, duplicate: 1, error: 0 });

      const all = await resultRecords(fs.readFileSync(run.files.all!));
      expect(Object.keys(all[0]!)).toEqual([
        'id', 'company', 'company_name', 'company_domain', 'company_industry', 'company_employee_count', 'company_country',
        'company_website', 'company_description', 'company_match', 'company_match_score', 'status', 'credits', 'cached', 'error',
      ]);
      const pick = (r: Record<string, string>) => [r.id, r.company_name, r.company_domain, r.company_match, r.company_match_score, r.status, r.credits, r.error];
      // Jobs bill every first lookup of a key, found or not, as gender jobs do: rows 4, 5 and 7 pay 1.
      expect(all.map(pick)).toEqual([
        ['1', 'Acme', 'acme.com', 'name', '1', 'ok', '1', ''],
        ['2', 'Acme', 'acme.com', 'domain', '1', 'ok', '1', ''],
        ['3', 'Acme', 'acme.com', 'near', '1', 'ok', '1', ''],
        ['4', '', '', '', '', 'ok', '1', ''],
        ['5', '', '', '', '', 'ok', '1', ''],
        ['6', 'Globex Corporation', 'globex.com', 'domain', '0.95', 'ok', '1', ''],
        ['7', '', '', '', '', 'ok', '1', ''],
        ['8', 'Acme', 'acme.com', 'name', '1', 'duplicate', '0', ''],
        ['9', '', '', '', '', 'invalid', '0', 'empty_value'],
      ]);
      expect(all[0]).toMatchObject({ company_industry: 'Manufacturing', company_employee_count: '1200', company_country: 'US', company_website: 'https://acme.com', company_description: 'Anvils and rockets' });
      const found = await resultRecords(fs.readFileSync(run.files.found!));
      expect(found.map((r) => r.id)).toEqual(['1', '2', '3', '6', '8']);
      expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(93);

      const rerun = await runJob(e, { file: input, type: 'company', accountId: account.id, outDir: path.join(e.dataDir, 'b') });
      expect(rerun.summary.credits_used).toBe(0);
      expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(93);
    });

    it('sees companies imported after an earlier answer, still free within the window', async () => {
      const e = await engine();
      const input = writeFile(e.dataDir, 'in.csv', 'company\nHooli\n');
      const account = await e.deps.billing.createAccount({ credits: 10, now: Date.now() });
      const before = await runJob(e, { file: input, type: 'company', accountId: account.id, outDir: path.join(e.dataDir, 'a') });
      expect((await resultRecords(fs.readFileSync(before.files.all!)))[0]).toMatchObject({ company_name: '', credits: '1' });

      await importCompanies(e.deps.store.companies, fs.createReadStream(writeFile(e.dataDir, 'd.csv', 'name,domain\nHooli Inc,hooli.xyz\n')), { maxLineBytes: 65_536 });
      const after = await runJob(e, { file: input, type: 'company', accountId: account.id, outDir: path.join(e.dataDir, 'b') });
      expect((await resultRecords(fs.readFileSync(after.files.all!)))[0]).toMatchObject({ company_name: 'Hooli Inc', company_match: 'near', credits: '0', cached: 'false' });
    });
  });

  describe('a company file whose key column is not headed company', () => {
    it('fails with no_key_column and charges nothing when no header is a company name, unless --column names the column', async () => {
      const e = await engine();
      await importCompanies(e.deps.store.companies, fs.createReadStream(writeFile(e.dataDir, 'd.csv', DIRECTORY)), { maxLineBytes: 65_536 });
      const input = writeFile(e.dataDir, 'in.csv', 'Kunde,Country\nGlobex,US\n');
      const account = await e.deps.billing.createAccount({ credits: 10, now: Date.now() });

      const guessed = await runJob(e, { file: input, type: 'company', accountId: account.id, outDir: path.join(e.dataDir, 'a') });
      expect(guessed.summary).toMatchObject({ status: 'failed', reason: 'no_key_column', credits_used: 0 });
      expect(guessed.summary.error_message).toContain('["Kunde", "Country"]');
      expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(10);
      const named = await runJob(e, { file: input, type: 'company', accountId: account.id, column: 'kunde', outDir: path.join(e.dataDir, 'b') });
      expect(named.summary).toMatchObject({ status: 'completed', rows: { total: 1, found: 1 } });
      expect((await resultRecords(fs.readFileSync(named.files.all!)))[0]).toMatchObject({ Kunde: 'Globex', company_name: 'Globex Corporation', company_match: 'near' });
    });

    it('finds a column headed Company Name by its alias, without --column', async () => {
      const e = await engine();
      await importCompanies(e.deps.store.companies, fs.createReadStream(writeFile(e.dataDir, 'd.csv', DIRECTORY)), { maxLineBytes: 65_536 });
      const input = writeFile(e.dataDir, 'in.csv', 'Company Name,Country\n"“Globex”",US\n');
      const account = await e.deps.billing.createAccount({ credits: 10, now: Date.now() });
      const found = await runJob(e, { file: input, type: 'company', accountId: account.id, outDir: path.join(e.dataDir, 'a') });
      expect(found.summary).toMatchObject({ status: 'completed', rows: { total: 1, found: 1 } });
      expect((await resultRecords(fs.readFileSync(found.files.all!)))[0]).toMatchObject({ 'Company Name': '“Globex”', company_name: 'Globex Corporation', company_match: 'near' });
    });
  });

  describe('POST /api/jobs/bulk with type=company', () => {
    it('runs a company job through the pipeline registry', async () => {
      const h = await harness();
      await importCompanies(h.engine.deps.store.companies, fs.createReadStream(writeFile(h.engine.dataDir, 'd.csv', DIRECTORY)), { maxLineBytes: 65_536 });
      const a = await newAccount(h, { credits: 100 });
      const body = multipart([{ name: 'type', value: 'company' }, { name: 'file', value: INPUT, filename: 'companies.csv' }]);
      const response = await h.app.inject({ method: 'POST', url: '/api/jobs/bulk', headers: { ...bearer(a.key), ...body.headers }, payload: body.payload });
      expect(response.statusCode, response.body).toBe(202);
      const job = json(response);
      expect(job).toMatchObject({ type: 'company', status: 'queued' });
      await runUntilDone(h, [job.id]);
      const done = json(await h.app.inject({ method: 'GET', url: `/api/jobs/${job.id}`, headers: bearer(a.key) }));
      expect(done).toMatchObject({ status: 'completed', credits_used: 7, rows: { total: 9, found: 5, invalid: 1, duplicate: 1 } });
    });
  });
});
