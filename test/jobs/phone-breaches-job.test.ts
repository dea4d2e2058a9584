import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { importBreaches, importCommand } from '../../src/cli/import-command.js';
import { runJob } from '../../src/cli/run-command.js';
import { isAppError } from '../../src/shared/errors.js';
import type { BreachRecord } from '../../src/storage/records.js';
import { bearer, closeHarnesses, json, multipart, newAccount, openApiHarness, runUntilDone } from '../support/api-harness.js';
import { resultRecords } from '../support/csv-fixture.js';
import { engineScope, TEST_STORES, writeFile, type TestEngine } from '../support/test-engine.js';
import { captureIo } from '../support/capture-io.js';

const BREACHES = [
  'phone,breach,breached_at',
  '+49 30 1234567,Acme,2019-05-01',
  '+49 30 1234567,Globex,2021-02-03',
  '+49 30 1234567,Acme,2019-05-01',
  '(030) 7654321,Initech,',
  '+44 20 7946 0958,Acme,2020-07-15',
  'not a number,Acme,2020-01-01',
  '+1 415 555 2671,,2020-01-01',
  '+1 415 555 2671,Hooli,2020-02-30',
].join('\n');

/** breached twice, unbreached, invalid, the first number again in another form, breached once. */
const INPUT = [
  'id,phone',
  '1,+49 30 1234567',
  '2,+1 (415) 555-2671',
  '3,call me',
  '4,(030) 123-4567',
  '5,00 44 20 7946 0958',
  '6,',
].join('\n');

/** What the index holds for every number that BREACHES names, read with default country DE. */
async function indexed(e: TestEngine): Promise<Record<string, BreachRecord[]>> {
  return Object.fromEntries(await e.deps.store.breaches.records(['+49301234567', '+49307654321', '+442079460958', '+14155552671']));
}

/** BREACHES as the index must hold it: each (number, breach) pair once, the first date kept, bad rows left out. */
const INDEXED = {
  '+49301234567': [
    { breach: 'Acme', breachedAt: '2019-05-01' },
    { breach: 'Globex', breachedAt: '2021-02-03' },
  ],
  '+49307654321': [{ breach: 'Initech', breachedAt: null }],
  '+442079460958': [{ breach: 'Acme', breachedAt: '2020-07-15' }],
};

describe.each(TEST_STORES)('phone breaches on %s', (store) => {
  const engines = engineScope(store);
  afterEach(async () => {
    // Harnesses first: their engines hold connections to databases that closeAll drops.
    await closeHarnesses();
    await engines.closeAll();
  });
  const engine = (): Promise<TestEngine> => engines.open();
  const harness = async () => openApiHarness(await engines.env());

  describe('sluice import breaches', () => {
    it('stores each (number, breach) pair once, counts bad rows without failing, and a re-import changes nothing', async () => {
      const e = await engine();
      const file = writeFile(e.dataDir, 'breaches.csv', BREACHES);
      const first = captureIo();
      expect(await importCommand(e, ['breaches', file, '--default-country', 'de', '--json'], first.io)).toBe(0);
      expect(JSON.parse(first.stdout())).toMatchObject({
        rows: 8,
        imported: 4,
        skipped: 1,
        invalid: 3,
        invalid_by_code: { invalid_phone: 1, invalid_breach: 1, invalid_date: 1 },
        first_invalid: [
          { row: 7, code: 'invalid_phone' },
          { row: 8, code: 'invalid_breach' },
          { row: 9, code: 'invalid_date' },
        ],
      });
      expect(await indexed(e)).toEqual(INDEXED);

      const again = await importBreaches(e.deps.store.breaches, fs.createReadStream(file), { maxLineBytes: 65_536, defaultCountry: 'DE' });
      expect(again).toMatchObject({ rows: 8, imported: 0, skipped: 5, invalid: 3 });
      expect(await indexed(e)).toEqual(INDEXED);
    });

    it('without --default-country, a national number is a bad row; an unknown country is a bad argument', async () => {
      const e = await engine();
      const file = writeFile(e.dataDir, 'breaches.csv', BREACHES);
      const summary = await importBreaches(e.deps.store.breaches, fs.createReadStream(file), { maxLineBytes: 65_536 });
      expect(summary).toMatchObject({ imported: 3, invalid: 4, invalid_by_code: { missing_country_code: 1 } });
      await expect(() => importCommand(e, ['breaches', file, '--default-country', 'XX'], captureIo().io)).rejects.toSatisfy((err) => isAppError(err, 'bad_argument'));
    });

    it('refuses a file without the phone, breach and breached_at columns', async () => {
      const e = await engine();
      const file = writeFile(e.dataDir, 'breaches.csv', 'number,breach\n+49301234567,Acme\n');
      await expect(() => importBreaches(e.deps.store.breaches, fs.createReadStream(file), { maxLineBytes: 65_536 })).rejects.toSatisfy((err) => isAppError(err, 'column_not_found'));
    });
  });

  describe('a phone_breaches job', () => {
    it('answers from the index, charges each valid number once, and lets invalid rows, repeats and reruns go free', async () => {
      const e = await engine();
      await importBreaches(e.deps.store.breaches, fs.createReadStream(writeFile(e.dataDir, 'b.csv', BREACHES)), { maxLineBytes: 65_536, defaultCountry: 'DE' });
      const input = writeFile(e.dataDir, 'in.csv', INPUT);
      const account = await e.deps.billing.createAccount({ credits: 100, now: Date.now() });

      const run = await runJob(e, { file: input, type: 'phone_breaches', accountId: account.id, defaultCountry: 'de', outDir: path.join(e.dataDir, 'a') });

      expect(run.summary).toMatchObject({ status: 'completed', type: 'phone_breaches', credits_used: 3 });
      expect(run.summary.rows).toMatchObject({ total: 6, processed: 6, found: 3, invalid: 2, duplicate: 1, error: 0 });
      const all = await resultRecords(fs.readFileSync(run.files.all!));
      const pick = (r: Record<string, string>) => [r.id, r.phone_e164, r.breached, r.total_breaches, r.first_breached, r.last_breached, r.status, r.credits, r.error];
      expect(all.map(pick)).toEqual([
        ['1', '+49301234567', 'true', '2', '2019-05-01', '2021-02-03', 'ok', '1', ''],
        ['2', '+14155552671', 'false', '0', '', '', 'ok', '1', ''],
        ['3', '', '', '', '', '', 'invalid', '0', 'invalid_phone'],
        ['4', '+49301234567', 'true', '2', '2019-05-01', '2021-02-03', 'duplicate', '0', ''],
        ['5', '+442079460958', 'true', '1', '2020-07-15', '2020-07-15', 'ok', '1', ''],
        ['6', '', '', '', '', '', 'invalid', '0', 'empty_value'],
      ]);
      expect(all[0]!.summary).toBe('Found in 2 breaches (2019-05-01 to 2021-02-03): Acme, Globex');
      // A phone number in a standard written form cannot run as a formula: written back as it was.
      expect(all[0]!.phone).toBe('+49 30 1234567');
      const found = await resultRecords(fs.readFileSync(run.files.found!));
      expect(found.map((r) => r.id)).toEqual(['1', '4', '5']);
      expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(97);

      const rerun = await runJob(e, { file: input, type: 'phone_breaches', accountId: account.id, defaultCountry: 'DE', outDir: path.join(e.dataDir, 'b') });
      expect(rerun.summary.credits_used).toBe(0);
      expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(97);
    });

    it('sees breaches imported after an earlier answer, still free within the window', async () => {
      const e = await engine();
      const input = writeFile(e.dataDir, 'in.csv', 'phone\n+1 415 555 2671\n');
      const account = await e.deps.billing.createAccount({ credits: 10, now: Date.now() });
      const before = await runJob(e, { file: input, type: 'phone_breaches', accountId: account.id, outDir: path.join(e.dataDir, 'a') });
      expect((await resultRecords(fs.readFileSync(before.files.all!)))[0]).toMatchObject({ breached: 'false', credits: '1' });

      await importBreaches(e.deps.store.breaches, fs.createReadStream(writeFile(e.dataDir, 'b.csv', 'phone,breach,breached_at\n+14155552671,Hooli,2024-03-01\n')), { maxLineBytes: 65_536 });
      const after = await runJob(e, { file: input, type: 'phone_breaches', accountId: account.id, outDir: path.join(e.dataDir, 'b') });
      expect((await resultRecords(fs.readFileSync(after.files.all!)))[0]).toMatchObject({ breached: 'true', total_breaches: '1', credits: '0', cached: 'false' });
      expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(9);
    });

    it('refuses an unknown --default-country before any job is made', async () => {
      const e = await engine();
      const input = writeFile(e.dataDir, 'in.csv', INPUT);
      await expect(() => runJob(e, { file: input, type: 'phone_breaches', defaultCountry: 'ZZ' })).rejects.toSatisfy((err) => isAppError(err, 'bad_argument'));
      expect((await e.deps.jobs.list({ limit: 10, offset: 0 })).total).toBe(0);
    });
  });

  describe('POST /api/jobs/bulk with type=phone_breaches', () => {
    function upload(key: string, fields: Record<string, string>, csv: string) {
      const body = multipart([...Object.entries(fields).map(([name, value]) => ({ name, value })), { name: 'file', value: csv, filename: 'phones.csv' }]);
      return { method: 'POST' as const, url: '/api/jobs/bulk', headers: { ...bearer(key), ...body.headers }, payload: body.payload };
    }

    it('reads national numbers with default_country and answers from the index', async () => {
      const h = await harness();
      await importBreaches(h.engine.deps.store.breaches, fs.createReadStream(writeFile(h.engine.dataDir, 'b.csv', BREACHES)), { maxLineBytes: 65_536, defaultCountry: 'DE' });
      const a = await newAccount(h, { credits: 100 });

      const response = await h.app.inject(upload(a.key, { type: 'phone_breaches', default_country: 'DE' }, INPUT));
      expect(response.statusCode).toBe(202);
      const job = json(response);
      expect(job).toMatchObject({ type: 'phone_breaches', status: 'queued' });
      await runUntilDone(h, [job.id]);

      const done = json(await h.app.inject({ method: 'GET', url: `/api/jobs/${job.id}`, headers: bearer(a.key) }));
      expect(done).toMatchObject({ status: 'completed', credits_used: 3, rows: { total: 6, found: 3, invalid: 2, duplicate: 1 } });
    });

    it('answers 422 unknown_country for a default_country it does not know', async () => {
      const h = await harness();
      const a = await newAccount(h, { credits: 100 });
      const response = await h.app.inject(upload(a.key, { type: 'phone_breaches', default_country: 'Germany' }, INPUT));
      expect(response.statusCode).toBe(422);
      expect(json(response)).toMatchObject({ code: 'unknown_country' });
    });
  });
});
