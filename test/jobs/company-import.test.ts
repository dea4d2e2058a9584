import fs from 'node:fs';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { importCommand, importCompanies } from '../../src/cli/import-command.js';
import { nameKey } from '../../src/lookups/company/company-names.js';
import { isAppError } from '../../src/shared/errors.js';
import { COMPANY_KEYS } from '../../src/storage/store.js';
import { captureIo } from '../support/capture-io.js';
import { engineScope, TEST_STORES, writeFile, type TestEngine } from '../support/test-engine.js';

/** A CRM export: its own header names, websites instead of domains, and untidy head counts. */
const CRM_EXPORT = [
  'Account Name,Website,Employees,Industry,Owner',
  'Acme,https://www.Acme.com/about,"1,200",Manufacturing,jane',
  'Globex,globex.com,50-100,Conglomerate,joe',
  'Initech,http://10.0.0.1/,~5000,Software,joe',
  'Hooli,,1.200,,',
  ',nameless.com,12,,',
].join('\n');

async function companiesNamed(e: TestEngine, names: string[]) {
  const groups = await e.deps.store.companies.byKey(COMPANY_KEYS.name, names.map(nameKey));
  return [...groups.values()].flat().sort((a, b) => a.name.localeCompare(b.name));
}

function ioWithStderr() {
  const out = captureIo();
  const err = new PassThrough();
  let text = '';
  err.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  return { io: { ...out.io, stderr: err as unknown as NodeJS.WriteStream }, stdout: out.stdout, stderr: () => text };
}

describe.each(TEST_STORES)('sluice import companies from real exports, on %s', (store) => {
  const engines = engineScope(store);
  afterEach(() => engines.closeAll());

  it('finds columns by alias, derives domains from websites, and keeps companies whose optional cells are bad', async () => {
    const e = await engines.open();
    const file = writeFile(e.dataDir, 'crm.csv', CRM_EXPORT);
    const run = captureIo();
    expect(await importCommand(e, ['companies', file, '--json'], run.io)).toBe(0);
    expect(JSON.parse(run.stdout())).toMatchObject({
      rows: 5,
      imported: 4,
      invalid: 1,
      invalid_by_code: { empty_value: 1 },
      warnings: 4,
      warnings_by_column: { employee_count: { invalid_employee_count: 3 }, website: { invalid_website: 1 } },
      first_warnings: [
        { row: 3, column: 'employee_count', code: 'invalid_employee_count' },
        { row: 4, column: 'website', code: 'invalid_website' },
        { row: 4, column: 'employee_count', code: 'invalid_employee_count' },
        { row: 5, column: 'employee_count', code: 'invalid_employee_count' },
      ],
    });
    expect(await companiesNamed(e, ['Acme', 'Globex', 'Initech', 'Hooli'])).toMatchObject([
      { name: 'Acme', domain: 'acme.com', website: 'https://www.Acme.com/about', employee_count: 1200, industry: 'Manufacturing', extra: '{"owner":"jane"}' },
      { name: 'Globex', domain: 'globex.com', website: 'globex.com', employee_count: null, industry: 'Conglomerate' },
      { name: 'Hooli', domain: null, website: null, employee_count: null, industry: null, extra: null },
      { name: 'Initech', domain: null, website: null, employee_count: null, industry: 'Software' },
    ]);
  });

  it('prints the warnings by column in the text summary', async () => {
    const e = await engines.open();
    const run = ioWithStderr();
    expect(await importCommand(e, ['companies', writeFile(e.dataDir, 'crm.csv', CRM_EXPORT)], run.io)).toBe(0);
    expect(run.stdout()).toContain('warnings   4 (cells left empty, companies kept: employee_count 3, website 1)\n');
    expect(run.stderr()).toContain('row 4: website left empty (invalid_website)\n');
  });

  it('reads columns named with --map, repeated or joined by commas', async () => {
    const e = await engines.open();
    const file = writeFile(e.dataDir, 'de.csv', ['Kunde;Netz;Anzahl', 'Muster GmbH;https://muster.de;80'].join('\n').replaceAll(';', ','));
    const run = captureIo();
    const args = ['companies', file, '--map', 'Kunde=name,Netz=website', '--map', 'Anzahl=employee_count', '--json'];
    expect(await importCommand(e, args, run.io)).toBe(0);
    expect(JSON.parse(run.stdout())).toMatchObject({ rows: 1, imported: 1, warnings: 0 });
    expect(await companiesNamed(e, ['Muster GmbH'])).toMatchObject([{ domain: 'muster.de', website: 'https://muster.de', employee_count: 80, extra: null }]);
  });

  it('refuses two candidate name columns, and a --map of a column the file lacks, before storing anything', async () => {
    const e = await engines.open();
    const file = writeFile(e.dataDir, 'two.csv', 'Company,Account Name\nAcme,Acme Corp\n');
    await expect(importCommand(e, ['companies', file], captureIo().io)).rejects.toSatisfy((err) => isAppError(err, 'ambiguous_column'));
    await expect(importCommand(e, ['companies', file, '--map', 'Firm=name'], captureIo().io)).rejects.toSatisfy((err) => isAppError(err, 'column_not_found'));
    await expect(importCommand(e, ['companies', file, '--map', 'Company=boss'], captureIo().io)).rejects.toSatisfy((err) => isAppError(err, 'bad_argument'));
    expect(await companiesNamed(e, ['Acme', 'Acme Corp'])).toEqual([]);
    expect(await importCommand(e, ['companies', file, '--map', 'Account Name=name', '--json'], captureIo().io)).toBe(0);
    expect(await companiesNamed(e, ['Acme', 'Acme Corp'])).toMatchObject([{ name: 'Acme Corp', extra: '{"company":"Acme"}' }]);
  });

  it('a company imported without a domain is updated, not repeated, when a later file gives it one', async () => {
    const e = await engines.open();
    const read = (name: string, text: string) => fs.createReadStream(writeFile(e.dataDir, name, text));
    const first = await importCompanies(e.deps.store.companies, read('a.csv', 'name,industry\nAcme,Anvils\nGlobex,Everything\n'), { maxLineBytes: 65_536 });
    expect(first).toMatchObject({ imported: 2, updated: 0 });
    const second = await importCompanies(e.deps.store.companies, read('b.csv', 'name,domain,industry\nACME,acme.com,Rockets\nGlobex,globex.com,Everything\n'), {
      maxLineBytes: 65_536,
    });
    expect(second).toMatchObject({ imported: 0, updated: 2, unchanged: 0 });
    expect(await companiesNamed(e, ['Acme', 'Globex'])).toMatchObject([
      { name: 'ACME', domain: 'acme.com', industry: 'Rockets' },
      { name: 'Globex', domain: 'globex.com', industry: 'Everything' },
    ]);
    // Once it has a domain, the same file again changes nothing, and another company of the same
    // name with another domain is a company of its own.
    const again = await importCompanies(e.deps.store.companies, read('c.csv', 'name,domain,industry\nACME,acme.com,Rockets\nAcme,acme.de,Anvils\n'), { maxLineBytes: 65_536 });
    expect(again).toMatchObject({ imported: 1, updated: 0, unchanged: 1 });
    expect((await companiesNamed(e, ['Acme'])).map((c) => c.domain).sort()).toEqual(['acme.com', 'acme.de']);
  });
});
