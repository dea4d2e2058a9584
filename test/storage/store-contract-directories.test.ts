import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { coreName, nameKey } from '../../src/lookups/company/company-names.js';
import type { BreachRow, CompanyRecord, CompanyRow } from '../../src/storage/records.js';
import type { Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { NOW, openTestStore, SINCE, type TestStore } from '../support/test-store.js';

function company(name: string, over: Partial<CompanyRecord> = {}): CompanyRecord {
  return { name, nameKey: nameKey(name), coreKey: coreName(name), domain: null, description: null, industry: null, employeeCount: null, country: null, website: null, extra: null, ...over };
}

const DIRECTORY = [
  company('Acme Inc', { domain: 'acme.com', employeeCount: 500, industry: 'Manufacturing', country: 'US', website: 'https://acme.com', extra: '{"ticker":"ACME"}' }),
  company('Acme Corporation', { employeeCount: 50 }),
  company('Acme Ltd', { domain: 'acme.co.uk' }),
  company('Globex Corporation', { domain: 'globex.com', employeeCount: 1000 }),
  company('Initech'),
  company('The Procter & Gamble Co.', { domain: 'pg.com', employeeCount: 100_000 }),
  company('Near Field Labs', { domain: 'nfl.example' }),
];

const names = (rows: readonly CompanyRow[]) => rows.map((r) => r.name);

describe.each(TEST_STORES)('Store contract on %s: directories', (kind) => {
  let opened: TestStore;
  let store: Store;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
  });
  afterEach(() => opened.close());

  describe('the breach index', () => {
    const row = (phone: string, breach: string, breachedAt: string | null): BreachRow => ({ phone, breach, breachedAt });

    it("adds each (phone, breach) once, keeping the first date, and gives a number's breaches by date (undated last), then name", async () => {
      const added = await store.breaches.add([
        row('+4915100000001', 'LinkedIn', '2021-06-01'),
        row('+4915100000001', 'adobe', '2013-10-04'),
        row('+4915100000001', 'Collection #1', null),
        row('+4915100000001', 'Zynga', '2013-10-04'),
        row('+4915100000001', 'adobe', '2019-01-01'),
        row('+4915100000002', 'Yahoo', null),
      ]);
      expect(added).toBe(5);
      expect(await store.breaches.add([row('+4915100000001', 'LinkedIn', '2012-01-01'), row('+4915100000002', 'Dropbox', '2012-07-01')])).toBe(1);
      expect(await store.breaches.add([])).toBe(0);
      const records = await store.breaches.records(['+4915100000001', '+4915100000002', '+4915100000003']);
      expect([...records.keys()].sort()).toEqual(['+4915100000001', '+4915100000002']);
      expect(records.get('+4915100000001')).toEqual([
        { breach: 'Zynga', breachedAt: '2013-10-04' },
        { breach: 'adobe', breachedAt: '2013-10-04' },
        { breach: 'LinkedIn', breachedAt: '2021-06-01' },
        { breach: 'Collection #1', breachedAt: null },
      ]);
      expect(records.get('+4915100000002')).toEqual([
        { breach: 'Dropbox', breachedAt: '2012-07-01' },
        { breach: 'Yahoo', breachedAt: null },
      ]);
      expect(await store.breaches.records([])).toEqual(new Map());
    });

    it('forgets the cached answers of the numbers an import changed, and only those', async () => {
      await store.breaches.add([row('+4915100000001', 'Adobe', '2013-10-04')]);
      for (const phone of ['+4915100000001', '+4915100000002', '+4915100000003']) await store.results.put('phone_breaches', phone, { breached: false }, NOW);
      await store.results.put('gender', '+4915100000002', { gender: 'unknown' }, NOW);
      await store.breaches.add([row('+4915100000001', 'Adobe', '2013-10-04'), row('+4915100000002', 'Yahoo', null)]);
      const cached = await store.results.getMany('phone_breaches', ['+4915100000001', '+4915100000002', '+4915100000003'], SINCE);
      expect([...cached.keys()].sort()).toEqual(['+4915100000001', '+4915100000003']);
      expect(await store.results.getMany('gender', ['+4915100000002'], SINCE)).toEqual(new Map([['+4915100000002', { gender: 'unknown' }]]));
    });
  });

  describe('the company directory', () => {
    it('inserts new companies, updates changed ones in place (by domain, else by name key), and counts the unchanged', async () => {
      expect(await store.companies.upsert(DIRECTORY)).toEqual({ inserted: 7, updated: 0, unchanged: 0 });
      expect(await store.companies.upsert(DIRECTORY)).toEqual({ inserted: 0, updated: 0, unchanged: 7 });
      const before = (await store.companies.byKey('domain', ['acme.com'])).get('acme.com')![0]!;
      const write = await store.companies.upsert([
        company('ACME, Inc.', { domain: 'acme.com', employeeCount: 600 }),
        company('Initech', { description: 'Software' }),
        company('Acme Corporation', { employeeCount: 50 }),
        company('Hooli', { domain: 'hooli.example' }),
      ]);
      expect(write).toEqual({ inserted: 1, updated: 2, unchanged: 1 });
      const after = (await store.companies.byKey('domain', ['acme.com'])).get('acme.com')!;
      expect(after).toEqual([{ id: before.id, name: 'ACME, Inc.', domain: 'acme.com', description: null, industry: null, employee_count: 600, country: null, website: null, extra: null }]);
      expect((await store.companies.byKey('name_key', ['initech'])).get('initech')).toMatchObject([{ name: 'Initech', description: 'Software', domain: null }]);
    });

    it('forgets the cached company answers on a write that changed something, and keeps them otherwise', async () => {
      await store.companies.upsert(DIRECTORY);
      await store.results.put('company', 'name:acme', { found: true }, NOW);
      await store.results.put('company', 'name:unrelated', { found: false }, NOW);
      await store.results.put('gender', 'name:acme', { gender: 'x' }, NOW);
      await store.companies.upsert(DIRECTORY);
      expect((await store.results.getMany('company', ['name:acme', 'name:unrelated'], SINCE)).size).toBe(2);
      await store.companies.upsert([company('Hooli')]);
      expect(await store.results.getMany('company', ['name:acme', 'name:unrelated'], SINCE)).toEqual(new Map());
      expect((await store.results.getMany('gender', ['name:acme'], SINCE)).size).toBe(1);
    });

    it('groups companies by a key column, larger companies first (unknown sizes last), then by id', async () => {
      await store.companies.upsert(DIRECTORY);
      const byCore = await store.companies.byKey('core_key', ['acme', 'globex', 'acme', 'nobody']);
      expect([...byCore.keys()].sort()).toEqual(['acme', 'globex']);
      expect(names(byCore.get('acme')!)).toEqual(['Acme Inc', 'Acme Corporation', 'Acme Ltd']);
      expect(byCore.get('acme')![0]).toMatchObject({ domain: 'acme.com', description: null, industry: 'Manufacturing', employee_count: 500, country: 'US', website: 'https://acme.com', extra: '{"ticker":"ACME"}' });
      expect(typeof byCore.get('acme')![0]!.id).toBe('number');
      expect(names((await store.companies.byKey('domain', ['pg.com'])).get('pg.com')!)).toEqual(['The Procter & Gamble Co.']);
      expect(names((await store.companies.byKey('name_key', ['acme ltd'])).get('acme ltd')!)).toEqual(['Acme Ltd']);
      expect(await store.companies.byKey('core_key', [])).toEqual(new Map());

      await store.companies.upsert([company('Acme GmbH', { domain: 'acme.de' }), company('Acme AG', { domain: 'acme.ch', employeeCount: 50 })]);
      const ties = (await store.companies.byKey('core_key', ['acme'])).get('acme')!;
      expect(names(ties)).toEqual(['Acme Inc', 'Acme Corporation', 'Acme AG', 'Acme Ltd', 'Acme GmbH']);
      expect(ties[1]!.id).toBeLessThan(ties[2]!.id);
      expect(ties[3]!.id).toBeLessThan(ties[4]!.id);
    });

    it('finds companies with every word of a name, the last also as a prefix, and no word read as query syntax', async () => {
      await store.companies.upsert(DIRECTORY);
      const sorted = async (core: string, limit = 10) => names(await store.companies.byWords(core, limit)).sort();
      expect(await sorted('acme')).toEqual(['Acme Corporation', 'Acme Inc', 'Acme Ltd']);
      expect(await sorted('acm')).toEqual(['Acme Corporation', 'Acme Inc', 'Acme Ltd']);
      expect(await store.companies.byWords('acme', 2)).toHaveLength(2);
      expect(await sorted('procter gam')).toEqual(['The Procter & Gamble Co.']);
      expect(await sorted('procter xyz')).toEqual([]);
      expect(await sorted('near field')).toEqual(['Near Field Labs']);
      expect(await sorted('near and or not')).toEqual([]);
      expect(await sorted('nobody')).toEqual([]);
    });

    it('offers candidates for a misspelt name, each with its core key', async () => {
      await store.companies.upsert(DIRECTORY);
      const candidates = async (core: string) => (await store.companies.spellingCandidates(core)).map((c) => [c.k, c.name]);
      expect(await candidates('globx')).toContainEqual(['globex', 'Globex Corporation']);
      expect(await candidates('acmee')).toEqual(expect.arrayContaining([['acme', 'Acme Inc'], ['acme', 'Acme Corporation'], ['acme', 'Acme Ltd']]));
      expect(await candidates('procter gambel')).toContainEqual(['procter gamble', 'The Procter & Gamble Co.']);
      for (const c of await store.companies.spellingCandidates('acmee')) expect(c.k).toBe(coreName(c.name));
      expect(await candidates('zzzzzz')).toEqual([]);
    });
  });
});
