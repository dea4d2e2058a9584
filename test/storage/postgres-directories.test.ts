import { afterEach, describe, expect, it } from 'vitest';
import { coreName, nameKey, similarity, trigrams } from '../../src/lookups/company/company-names.js';
import type { BreachRow, CompanyRecord, CompanyRow } from '../../src/storage/records.js';
import { PgBreaches } from '../../src/storage/postgres/pg-breaches.js';
import { PgCompanies } from '../../src/storage/postgres/pg-companies.js';
import type { PgDatabase } from '../../src/storage/postgres/pg-database.js';
import { PgResults } from '../../src/storage/postgres/pg-results.js';
import { poolScope, postgresServerUrl } from '../support/postgres-database.js';

const NOW = 1_700_000_000_000;

interface Peer {
  db: PgDatabase;
  breaches: PgBreaches;
  companies: PgCompanies;
  results: PgResults;
}

const scope = poolScope();
afterEach(() => scope.closeAll());

/** A migrated database of the test's own, and `count` independent pools on it, as separate processes would have. */
async function openPeers(count = 1): Promise<Peer[]> {
  const { pools } = await scope.open('pg_directories', count);
  return pools.map((db) => ({ db, breaches: new PgBreaches(db), companies: new PgCompanies(db), results: new PgResults(db) }));
}

function company(name: string, over: Partial<CompanyRecord> = {}): CompanyRecord {
  return { name, nameKey: nameKey(name), coreKey: coreName(name), domain: null, description: null, industry: null, employeeCount: null, country: null, website: null, extra: null, ...over };
}

const breach = (phone: string, name: string, breachedAt: string | null): BreachRow => ({ phone, breach: name, breachedAt });
const names = (rows: readonly CompanyRow[]) => rows.map((r) => r.name);

/** The lookup's own bar for a spelling variant: trigram Dice on the first 64 characters. */
const passes = (core: string, key: string) => similarity(trigrams([...core].slice(0, 64).join('')), trigrams([...key].slice(0, 64).join(''))) >= 0.5;

async function cachedKeys(p: Peer, kind: string): Promise<string[]> {
  const { rows } = await p.db.query<{ key: string }>('SELECT lookup_key AS key FROM result_cache WHERE kind = $1 ORDER BY lookup_key COLLATE "C"', [kind]);
  return rows.map((r) => r.key);
}

describe.skipIf(!postgresServerUrl())('PostgreSQL breach index and company directory', () => {
  describe('the breach index', () => {
    it("gives a number's breaches by date, undated last, then name in byte order (upper case before lower, as SQLite)", async () => {
      const [p] = (await openPeers()) as [Peer];
      expect(
        await p.breaches.add([
          breach('+491', 'beta', '2020-01-01'),
          breach('+491', 'alpha', '2020-01-01'),
          breach('+491', 'Zeta', '2020-01-01'),
          breach('+491', 'undated_b', null),
          breach('+491', 'Undated_a', null),
          breach('+491', 'older', '2019-05-05'),
          breach('+492', 'solo', null),
        ]),
      ).toBe(7);
      const records = await p.breaches.records(['+491', '+492', '+499']);
      expect(records.get('+491')!.map((r) => `${r.breachedAt ?? '-'} ${r.breach}`)).toEqual([
        '2019-05-05 older',
        '2020-01-01 Zeta',
        '2020-01-01 alpha',
        '2020-01-01 beta',
        '- Undated_a',
        '- undated_b',
      ]);
      expect(records.get('+492')).toEqual([{ breach: 'solo', breachedAt: null }]);
      expect(records.has('+499')).toBe(false);
      expect((await p.breaches.records([])).size).toBe(0);
    });

    it('keeps the first of two lines for one pair in a batch, skips pairs already held, and forgets only the changed numbers', async () => {
      const [p] = (await openPeers()) as [Peer];
      await p.breaches.add([breach('+491', 'adobe', '2013-10-04')]);
      for (const phone of ['+491', '+492', '+493']) await p.results.put('phone_breaches', phone, { phone }, NOW);
      await p.results.put('company', '+492', { other: 'kind' }, NOW);

      const added = await p.breaches.add([
        breach('+492', 'dropbox', '2012-07-01'),
        breach('+492', 'dropbox', '2016-08-31'),
        breach('+491', 'adobe', '2020-01-01'),
      ]);
      expect(added).toBe(1);
      expect((await p.breaches.records(['+491', '+492'])).get('+492')).toEqual([{ breach: 'dropbox', breachedAt: '2012-07-01' }]);
      expect((await p.breaches.records(['+491'])).get('+491')).toEqual([{ breach: 'adobe', breachedAt: '2013-10-04' }]);
      expect(await cachedKeys(p, 'phone_breaches')).toEqual(['+491', '+493']);
      expect(await cachedKeys(p, 'company')).toEqual(['+492']);
      expect(await p.breaches.add([breach('+491', 'adobe', null)])).toBe(0);
      expect(await cachedKeys(p, 'phone_breaches')).toEqual(['+491', '+493']);
    });

    it('two imports of one file at once, from two pools, add each pair once between them', async () => {
      const [a, b] = (await openPeers(2)) as [Peer, Peer];
      const file = Array.from({ length: 400 }, (_, i) => breach(`+49${1000 + (i % 100)}`, `breach_${i % 7}_${Math.floor(i / 100)}`, null));
      const distinct = new Set(file.map((r) => `${r.phone} ${r.breach}`)).size;
      const added = await Promise.all([a.breaches.add(file), b.breaches.add(file), a.breaches.add(file.slice().reverse())]);
      expect(added.reduce((x, y) => x + y, 0)).toBe(distinct);
      const { rows } = await a.db.query<{ n: number }>('SELECT count(*)::int AS n FROM phone_breaches');
      expect(rows[0]!.n).toBe(distinct);
    });
  });

  describe('the company directory', () => {
    const DIRECTORY = [
      company('Acme Inc', { domain: 'acme.com', employeeCount: 500 }),
      company('Acme Corporation', { employeeCount: 50 }),
      company('Acme Ltd', { domain: 'acme.co.uk' }),
      company('ACME', { domain: 'acme.org', employeeCount: 500 }),
      company('Acme Widgets International', { domain: 'acmewidgets.com' }),
      company('Acme Widgets', { domain: 'widgets.example' }),
      company('Globex Corporation', { domain: 'globex.com', employeeCount: 1000 }),
      company('Northwinds Trading'),
      company('Initech'),
    ];

    it('counts inserts, real updates and unchanged rows as SQLite does, and forgets cached answers only when something changed', async () => {
      const [p] = (await openPeers()) as [Peer];
      expect(await p.companies.upsert(DIRECTORY)).toEqual({ inserted: 9, updated: 0, unchanged: 0 });
      await p.results.put('company', 'name:acme', { cached: true }, NOW);
      await p.results.put('gender', 'ann@example.com', { cached: true }, NOW);

      expect(await p.companies.upsert(DIRECTORY)).toEqual({ inserted: 0, updated: 0, unchanged: 9 });
      expect(await cachedKeys(p, 'company')).toEqual(['name:acme']);

      const changed = [
        company('Acme Inc', { domain: 'acme.com', employeeCount: 501 }),
        company('Initech', { description: 'TPS reports' }),
        company('Acme Ltd', { domain: 'acme.co.uk', description: null }),
        company('ACME LTD', { domain: 'acme.co.uk' }),
      ];
      // The last line renames the acme.co.uk row (its name key changes too), so it counts as an update.
      expect(await p.companies.upsert(changed)).toEqual({ inserted: 0, updated: 3, unchanged: 1 });
      expect(await cachedKeys(p, 'company')).toEqual([]);
      expect(await cachedKeys(p, 'gender')).toEqual(['ann@example.com']);
      const byDomain = await p.companies.byKey('domain', ['acme.com', 'acme.co.uk']);
      expect(byDomain.get('acme.com')![0]).toMatchObject({ name: 'Acme Inc', employee_count: 501 });
      expect(byDomain.get('acme.co.uk')![0]).toMatchObject({ name: 'ACME LTD' });
      expect((await p.companies.byKey('name_key', ['initech'])).get('initech')![0]).toMatchObject({ description: 'TPS reports' });
      // Back to NULL is a change too: IS DISTINCT FROM, not <>, which NULL would leave unknown.
      expect(await p.companies.upsert([company('Initech')])).toEqual({ inserted: 0, updated: 1, unchanged: 0 });
    });

    it('two imports of one batch at once, from two pools, insert each company once between them', async () => {
      const [a, b] = (await openPeers(2)) as [Peer, Peer];
      const batch = Array.from({ length: 200 }, (_, i) => company(`Company ${i}`, i % 2 === 0 ? { domain: `c${i}.example` } : {}));
      const writes = await Promise.all([a.companies.upsert(batch), b.companies.upsert(batch)]);
      expect(writes.map((w) => w.inserted).reduce((x, y) => x + y, 0)).toBe(200);
      expect(writes.map((w) => w.inserted + w.unchanged)).toEqual([200, 200]);
    });

    it('groups rows by a key column, larger companies first (unknown sizes last), then id, without the key in the rows', async () => {
      const [p] = (await openPeers()) as [Peer];
      await p.companies.upsert(DIRECTORY);
      const byCore = await p.companies.byKey('core_key', ['acme', 'globex', 'nobody']);
      expect(names(byCore.get('acme')!)).toEqual(['Acme Inc', 'ACME', 'Acme Corporation', 'Acme Ltd']);
      expect(names(byCore.get('globex')!)).toEqual(['Globex Corporation']);
      expect(byCore.has('nobody')).toBe(false);
      expect(Object.keys(byCore.get('globex')![0]!).sort()).toEqual(['country', 'description', 'domain', 'employee_count', 'extra', 'id', 'industry', 'name', 'website']);
      expect(typeof byCore.get('globex')![0]!.id).toBe('number');
      expect((await p.companies.byKey('domain', [])).size).toBe(0);
    });

    it('finds names with every word, the last also as a prefix (3 characters or more), shorter names first, then id', async () => {
      const [p] = (await openPeers()) as [Peer];
      await p.companies.upsert(DIRECTORY);
      expect(names(await p.companies.byWords('acme wid', 5))).toEqual(['Acme Widgets', 'Acme Widgets International']);
      expect(names(await p.companies.byWords('widgets acme', 5))).toEqual(['Acme Widgets', 'Acme Widgets International']);
      expect(names(await p.companies.byWords('acm', 3))).toEqual(['Acme Inc', 'Acme Corporation', 'Acme Ltd']);
      expect(names(await p.companies.byWords('northwinds', 5))).toEqual(['Northwinds Trading']);
      expect(await p.companies.byWords('ac', 5)).toEqual([]);
      expect(await p.companies.byWords('acme nothing', 5)).toEqual([]);
    });

    it('reads no word of a query as tsquery syntax', async () => {
      const [p] = (await openPeers()) as [Peer];
      await p.companies.upsert([...DIRECTORY, company("it's a & b", { domain: 'quotes.example' })]);
      for (const core of ["it's", 'a & b', 'x:*', '!acme', 'back\\slash', "o''brien", '(acme', 'acme |', '<->', '']) {
        await expect(p.companies.byWords(core, 5)).resolves.toBeInstanceOf(Array);
      }
      expect(names(await p.companies.byWords('!acme', 5))).toEqual(['Acme Inc', 'Acme Corporation', 'Acme Ltd', 'ACME', 'Acme Widgets']);
    });

    it('offers a name one typo away as a spelling candidate, with its core key: Globex Corporation for globx', async () => {
      const [p] = (await openPeers()) as [Peer];
      await p.companies.upsert(DIRECTORY);
      const core = coreName('globx corporation');
      expect(core).toBe('globx');
      const candidates = await p.companies.spellingCandidates(core);
      const globex = candidates.find((c) => c.name === 'Globex Corporation');
      expect(globex).toMatchObject({ k: 'globex', domain: 'globex.com', employee_count: 1000 });
      expect(passes(core, globex!.k)).toBe(true);
      expect(await p.companies.spellingCandidates('gl')).toEqual([]);
    });

    it("finds a swap of two letters across the pieces' boundary, which SQLite's pieces alone miss", async () => {
      const [p] = (await openPeers()) as [Peer];
      await p.companies.upsert(DIRECTORY);
      // Pieces `not` `rhw` `inds`: the swap breaks the first two, and `inds` alone is not half of them.
      const core = 'notrhwinds';
      const candidates = await p.companies.spellingCandidates(core);
      expect(candidates.map((c) => c.k)).toContain('northwinds trading');
      expect(passes('notrhwinds', 'northwinds')).toBe(true);
    });

    it('gives at most 500 candidates, the most similar first, then by id, the same on every call', async () => {
      const [p] = (await openPeers()) as [Peer];
      const many = Array.from({ length: 600 }, (_, i) => company(`Globex ${'x'.repeat(i % 7)}${i}`));
      await p.companies.upsert([...many, ...DIRECTORY]);
      const first = await p.companies.spellingCandidates('globx');
      expect(first).toHaveLength(500);
      expect(first[0]!.k).toBe('globex');
      const scored = await p.db.query<{ id: number; s: number }>("SELECT id, similarity(left(core_key, 64), 'globx') AS s FROM companies WHERE id = ANY($1::bigint[])", [first.map((c) => c.id)]);
      const score = new Map(scored.rows.map((r) => [r.id, r.s]));
      const expected = first.slice().sort((x, y) => score.get(y.id)! - score.get(x.id)! || x.id - y.id);
      expect(first.map((c) => c.id)).toEqual(expected.map((c) => c.id));
      expect((await p.companies.spellingCandidates('globx')).map((c) => c.id)).toEqual(first.map((c) => c.id));
    });
  });
});
