import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { importCompanies } from '../../src/cli/import-command.js';
import { COMPANY_MATCH_THRESHOLD, companyScore } from '../../src/lookups/company/company-score.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness, type ApiHarness } from '../support/api-harness.js';
import { engineScope, TEST_STORES } from '../support/test-engine.js';

const name = (text: string) => ({ domain: undefined, name: text });

describe('companyScore', () => {
  it.each([
    ['Beta Labs 434 BV', 'Beta Labs 434', 1],
    ['Beta Labs 434', 'Beta Labs 434 GmbH', 1],
    ['ACME, Inc.', 'Acme', 1],
    ['Labs Beta 434', 'Beta Labs 434', 1],
    ['Microsft', 'Microsoft', 0.889],
  ])('%j finds %j with %d', (query, candidate, score) => {
    expect(companyScore(name(query), { name: candidate, domain: null })).toBe(score);
    expect(score).toBeGreaterThanOrEqual(COMPANY_MATCH_THRESHOLD);
  });

  it.each([
    ['Beta Labs 434 BV', 'Beta Labs 4366'],
    ['Beta Labs 434', 'Beta Labs'],
    ['Umbrella', 'Umbrella Holdings'],
    ['Globx', 'Globex'],
    ['Acme 2', 'Acme 3'],
  ])('%j does not find %j', (query, candidate) => {
    expect(companyScore(name(query), { name: candidate, domain: null })).toBeLessThan(COMPANY_MATCH_THRESHOLD);
  });

  it('gives 1 to the same domain and 0.95 to a parent domain, whatever the names', () => {
    expect(companyScore({ domain: 'betalabs.nl', name: 'betalabs.nl' }, { name: 'Beta Labs 434 BV', domain: 'betalabs.nl' })).toBe(1);
    expect(companyScore({ domain: 'shop.betalabs.nl', name: 'shop.betalabs.nl' }, { name: 'Beta Labs 434 BV', domain: 'betalabs.nl' })).toBe(0.95);
  });
});

const DIRECTORY = ['name,domain,industry', 'Beta Labs 4366,betalabs4366.com,Research', 'Beta Labs 434,betalabs.nl,Research'].join('\n');
const NEAR_MISS_ONLY = ['name,domain,industry', 'Beta Labs 4366,betalabs4366.com,Research'].join('\n');

describe.each(TEST_STORES)('company scores on %s', (store) => {
  const engines = engineScope(store);
  afterEach(async () => {
    await closeHarnesses();
    await engines.closeAll();
  });
  const harness = async (directory: string): Promise<ApiHarness> => {
    const h = await openApiHarness({ ...(await engines.env()), SLUICE_RATE_LIMIT_PER_MINUTE: '100000' });
    await importCompanies(h.engine.deps.store.companies, Readable.from([Buffer.from(directory)]), { maxLineBytes: 65_536 });
    return h;
  };
  const post = (h: ApiHarness, key: string, url: string, payload: object) => h.app.inject({ method: 'POST', url, headers: bearer(key), payload });

  it('a near miss (Beta Labs 4366 for Beta Labs 434 BV) is not found on either endpoint: the agent lookup (1 per result) is free, the bulk query that ran costs 1 (spec 8)', async () => {
    const h = await harness(NEAR_MISS_ONLY);
    const { id, key } = await newAccount(h, { credits: 10 });
    const agent = json(await post(h, key, '/api/agent/company', { query: 'Beta Labs 434 BV' }));
    expect(agent).toEqual({ company: 'Beta Labs 434 BV', results: [], profile: null, total: 0, credits: 0 });
    const bulk = json(await post(h, key, '/api/bulk-company-search', { queries: ['Beta Labs 434 BV'] }));
    expect(bulk).toEqual({ results: [{ query: 'Beta Labs 434 BV', company: null }], credits_used: 1 });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(9);
  });

  it('the same name without its legal form is found with score 1, ahead of the near miss, which is left out', async () => {
    const h = await harness(DIRECTORY);
    const { id, key } = await newAccount(h, { credits: 10 });
    const agent = json(await post(h, key, '/api/agent/company', { query: 'Beta Labs 434 BV' }));
    expect(agent.results).toEqual([expect.objectContaining({ name: 'Beta Labs 434', score: 1 })]);
    expect(agent).toMatchObject({ total: 1, credits: 1, profile: { name: 'Beta Labs 434' } });
    const bulk = json(await post(h, key, '/api/bulk-company-search', { queries: ['Beta Labs 434 BV', 'Beta Labs 43'] }));
    expect(bulk).toMatchObject({ results: [{ company: { name: 'Beta Labs 434', score: 1 } }, { company: null }], credits_used: 2 });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(7);
  });

  it('a domain query is found with score 1', async () => {
    const h = await harness(DIRECTORY);
    const { key } = await newAccount(h, { credits: 10 });
    const agent = json(await post(h, key, '/api/agent/company', { query: 'https://www.betalabs.nl/' }));
    expect(agent).toMatchObject({ results: [{ name: 'Beta Labs 434', domain: 'betalabs.nl', score: 1 }], credits: 1 });
  });

  it('a bulk search whose queries the balance cannot cover is a 402 that charges nothing', async () => {
    const h = await harness(DIRECTORY);
    const { id, key } = await newAccount(h, { credits: 1 });
    const response = await post(h, key, '/api/bulk-company-search', { queries: ['Beta Labs 434', 'betalabs4366.com'] });
    expect(response.statusCode).toBe(402);
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(1);
    // Every query that runs is priced, found or not (spec 8): one query costs the 1 credit left.
    expect(json(await post(h, key, '/api/bulk-company-search', { queries: ['Beta Labs 9'] }))).toMatchObject({ results: [{ company: null }], credits_used: 1 });
  });
});
