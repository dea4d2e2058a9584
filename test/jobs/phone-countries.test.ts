import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { importBreaches } from '../../src/cli/import-command.js';
import { formatJob } from '../../src/cli/format-job.js';
import { runJob } from '../../src/cli/run-command.js';
import { bearer, closeHarnesses, json, multipart, newAccount, openApiHarness, runUntilDone } from '../support/api-harness.js';
import { resultRecords } from '../support/csv-fixture.js';
import { engineScope, TEST_STORES, writeFile, type TestEngine } from '../support/test-engine.js';

/** The wrong key of the worst case is in the index too: reading it would report a breach. */
const BREACHES = ['phone,breach,breached_at', '+1 415 816 6557,Hooli,2020-02-01', '+49 4158 166557,Wrong,2019-01-01', '+81 90 1234 5678,Initech,2021-03-04'].join('\n');

/**
 * National numbers of 11 countries, each with its row's country in another accepted form, then: a
 * +CC against its row's country, a repeat with an extension, an unreadable country, and a national
 * number with no row country, read with the job's default DE (the case).
 */
const TEN_COUNTRIES = [
  'id,phone,Country',
  '1,(415) 816-6557,United States',
  '2,030 1234567,DE',
  '3,020 7946 0958,UK',
  '4,06 12 34 56 78,France',
  '5,612 34 56 78,España',
  '6,06 123 4567,+39',
  '7,06 12345678,Nederland',
  '8,(11) 91234-5678,Brasil',
  '9,090-1234-5678,81',
  '10,098765 43210,India',
  '11,(604) 555-0134,Canada',
  '12,+49 30 7654321,US',
  '13,(415) 816-6557 x12,usa',
  '14,030 7654321,Narnia',
  '15,(415) 816-6557,',
].join('\n');

const EXPECTED_ROWS = [
  ['1', '(415) 816-6557', '+14158166557', 'ok', '1', ''],
  ['2', '030 1234567', '+49301234567', 'ok', '1', ''],
  ['3', '020 7946 0958', '+442079460958', 'ok', '1', ''],
  ['4', '06 12 34 56 78', '+33612345678', 'ok', '1', ''],
  ['5', '612 34 56 78', '+34612345678', 'ok', '1', ''],
  ['6', '06 123 4567', '+39061234567', 'ok', '1', ''],
  ['7', '06 12345678', '+31612345678', 'ok', '1', ''],
  ['8', '(11) 91234-5678', '+5511912345678', 'ok', '1', ''],
  ['9', '090-1234-5678', '+819012345678', 'ok', '1', ''],
  ['10', '098765 43210', '+919876543210', 'ok', '1', ''],
  ['11', '(604) 555-0134', '+16045550134', 'ok', '1', ''],
  ['12', '+49 30 7654321', '+49307654321', 'ok', '1', ''],
  ['13', '(415) 816-6557 x12', '+14158166557', 'duplicate', '0', ''],
  ['14', '030 7654321', '', 'invalid', '0', 'unknown_country'],
  ['15', '(415) 816-6557', '', 'invalid', '0', 'implausible_number'],
];

const EXPECTED_COUNTRIES = { US: 2, DE: 2, BR: 1, CA: 1, ES: 1, FR: 1, GB: 1, IN: 1, IT: 1, JP: 1, NL: 1 };

const pick = (r: Record<string, string>) => [r.id!, r.phone!, r.phone_e164!, r.status!, r.credits!, r.error!];

describe.each(TEST_STORES)('per-row phone countries on %s', (store) => {
  const engines = engineScope(store);
  afterEach(async () => {
    await closeHarnesses();
    await engines.closeAll();
  });
  const harness = async () => openApiHarness(await engines.env());
  const importIndex = (e: TestEngine) =>
    importBreaches(e.deps.store.breaches, fs.createReadStream(writeFile(e.dataDir, 'b.csv', BREACHES)), { maxLineBytes: 65_536 });

  it('sluice run reads each national number with its row country, charges only the numbers read, and counts them per country', async () => {
    const e = await engines.open();
    await importIndex(e);
    const account = await e.deps.billing.createAccount({ credits: 100, now: Date.now() });
    const run = await runJob(e, { file: writeFile(e.dataDir, 'in.csv', TEN_COUNTRIES), type: 'phone_breaches', accountId: account.id, defaultCountry: 'DE', outDir: path.join(e.dataDir, 'out') });

    expect(run.summary).toMatchObject({ status: 'completed', credits_used: 12, countries: EXPECTED_COUNTRIES, country_overrides: 1 });
    expect(run.summary.rows).toMatchObject({ total: 15, invalid: 2, duplicate: 1, found: 3 });
    const all = await resultRecords(fs.readFileSync(run.files.all!));
    expect(all.map(pick)).toEqual(EXPECTED_ROWS);
    // The US number and the Japanese one are in the index; the German misreading is not reached.
    expect(all.filter((r) => r.breached === 'true').map((r) => r.id)).toEqual(['1', '9', '13']);
    expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(88);
    expect(formatJob(run.summary)).toContain("countries  DE 2, US 2, BR 1, CA 1, ES 1, FR 1, GB 1, IN 1, 3 more (3); 1 read by their own +CC against the row's country");
  });

  it('POST /api/jobs/bulk gives the same rows, and GET /api/jobs/{id} and /api/phone-jobs?id= show the counts', async () => {
    const h = await harness();
    await importIndex(h.engine);
    const a = await newAccount(h, { credits: 100 });
    const body = multipart([
      { name: 'type', value: 'phone_breaches' },
      { name: 'default_country', value: 'DE' },
      { name: 'file', value: TEN_COUNTRIES, filename: 'phones.csv' },
    ]);
    const response = await h.app.inject({ method: 'POST', url: '/api/jobs/bulk', headers: { ...bearer(a.key), ...body.headers }, payload: body.payload });
    expect(response.statusCode).toBe(202);
    const id = json(response).id as string;
    await runUntilDone(h, [id]);

    const view = json(await h.app.inject({ method: 'GET', url: `/api/jobs/${id}`, headers: bearer(a.key) }));
    expect(view).toMatchObject({ status: 'completed', credits_used: 12, countries: EXPECTED_COUNTRIES, country_overrides: 1 });
    const phoneView = json(await h.app.inject({ method: 'GET', url: `/api/phone-jobs?id=${id}`, headers: bearer(a.key) }));
    expect(phoneView).toMatchObject({ countries: EXPECTED_COUNTRIES, country_overrides: 1 });
    const all = await resultRecords(await h.engine.deps.objects.getBytes((await h.engine.deps.jobs.require(id)).resultAllKey!));
    expect(all.map(pick)).toEqual(EXPECTED_ROWS);
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(88);
  });

  describe("the issue's mixed US/DE list with --default-country DE", () => {
    const rows = ['(415) 816-6557', '(212) 555-0187', '030 1234567', '+49 30 7654321'];

    it('with a country column, the US numbers are US numbers', async () => {
      const e = await engines.open();
      await importIndex(e);
      const account = await e.deps.billing.createAccount({ credits: 10, now: Date.now() });
      const csv = ['phone,country_code', `${rows[0]},US`, `${rows[1]},US`, `${rows[2]},DE`, `${rows[3]},DE`].join('\n');
      const run = await runJob(e, { file: writeFile(e.dataDir, 'mixed.csv', csv), type: 'phone_breaches', accountId: account.id, defaultCountry: 'DE', outDir: path.join(e.dataDir, 'a') });
      const all = await resultRecords(fs.readFileSync(run.files.all!));
      expect(all.map((r) => [r.phone_e164, r.status, r.breached])).toEqual([
        ['+14158166557', 'ok', 'true'],
        ['+12125550187', 'ok', 'false'],
        ['+49301234567', 'ok', 'false'],
        ['+49307654321', 'ok', 'false'],
      ]);
      expect(run.summary).toMatchObject({ credits_used: 4, countries: { US: 2, DE: 2 }, country_overrides: 0 });
    });

    it('without one, the US numbers are implausible German numbers: invalid and free, never +494158166557', async () => {
      const e = await engines.open();
      await importIndex(e);
      const account = await e.deps.billing.createAccount({ credits: 10, now: Date.now() });
      const run = await runJob(e, { file: writeFile(e.dataDir, 'mixed.csv', ['phone', ...rows].join('\n')), type: 'phone_breaches', accountId: account.id, defaultCountry: 'DE', outDir: path.join(e.dataDir, 'b') });
      const all = await resultRecords(fs.readFileSync(run.files.all!));
      expect(all.map((r) => [r.phone_e164, r.status, r.credits, r.error])).toEqual([
        ['', 'invalid', '0', 'implausible_number'],
        ['', 'invalid', '0', 'implausible_number'],
        ['+49301234567', 'ok', '1', ''],
        ['+49307654321', 'ok', '1', ''],
      ]);
      expect(run.summary).toMatchObject({ credits_used: 2, countries: { DE: 2 }, country_overrides: 0 });
      expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(8);
    });
  });

  it('reads the country column the job names (countryColumn), and refuses one the header lacks before any charge', async () => {
    const h = await harness();
    const a = await newAccount(h, { credits: 10 });
    const submit = (csv: string, countryColumn: string) =>
      h.engine.jobService.submit({ accountId: a.id, type: 'phone_breaches', body: Readable.from([Buffer.from(csv)]), inputName: 'p.csv', options: { countryColumn } });
    const named = await submit('phone,Nation,country\n(415) 816-6557,US,DE\n', 'nation');
    const missing = await submit('phone,country\n(415) 816-6557,US\n', 'Nation');
    await runUntilDone(h, [named.id, missing.id]);

    const done = await h.engine.deps.jobs.require(named.id);
    expect(done).toMatchObject({ status: 'completed', creditsUsed: 1, countries: { byCountry: { US: 1 }, overrides: 0 } });
    const refused = await h.engine.deps.jobs.require(missing.id);
    expect(refused).toMatchObject({ status: 'failed', creditsUsed: 0, countries: null });
    expect(refused.errorMessage).toContain('Nation');
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(9);
  });

  it('a job without phone numbers shows no counts', async () => {
    const e = await engines.open();
    const run = await runJob(e, { file: writeFile(e.dataDir, 'e.csv', 'email,country\nanna@example.com,DE\n'), type: 'gender', outDir: path.join(e.dataDir, 'g') });
    expect(run.summary.status).toBe('completed');
    expect(run.summary).not.toHaveProperty('countries');
    expect((await e.deps.jobs.require(run.summary.id)).countries).toBeNull();
  });
});
