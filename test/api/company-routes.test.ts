import type { LookupProvider } from '../../src/lookups/lookup-provider.js';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { importCompanies } from '../../src/cli/import-command.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness, type ApiHarness } from '../support/api-harness.js';

const DIRECTORY = [
  'name,domain,description,industry,employee_count,country,website,ticker,linkedin',
  'Acme,acme.com,Anvils,Manufacturing,1200,US,https://acme.com,ACME,https://www.linkedin.com/company/acme',
  'Acme Labs,acmelabs.io,Research,Research,40,US,,,',
  'Acme Widgets,acmewidgets.com,Widgets,Manufacturing,15,DE,,,',
  'Globex Corporation,globex.com,Everything,Conglomerate,50000,US,https://globex.com,,',
  'Initech,initech.com,Software,Software,300,US,,,',
  'Initech GmbH,initech.de,Software,Software,200,DE,,,',
  'Initech Ltd,initech.co.uk,Software,Software,100,GB,,,',
].join('\n');

async function harness(): Promise<ApiHarness> {
  const h = await openApiHarness({ SLUICE_RATE_LIMIT_PER_MINUTE: '100000' });
  await importCompanies(h.engine.deps.store.companies, Readable.from([Buffer.from(DIRECTORY)]), { maxLineBytes: 65_536 });
  return h;
}

afterEach(closeHarnesses);

function agent(h: ApiHarness, key: string, payload: unknown) {
  return h.app.inject({ method: 'POST', url: '/api/agent/company', headers: bearer(key), payload: payload as object });
}

function bulk(h: ApiHarness, key: string, payload: unknown) {
  return h.app.inject({ method: 'POST', url: '/api/bulk-company-search', headers: bearer(key), payload: payload as object });
}

const ACME_RESULT = { name: 'Acme', domain: 'acme.com', industry: 'Manufacturing', employee_count: 1200, country: 'US', website: 'https://acme.com', score: 1 };

describe('POST /api/agent/company', () => {
  it('answers an exact name with the spec fields, fills profile fields from extra columns, and charges 1 per result', async () => {
    const h = await harness();
    const { id, key } = await newAccount(h, { credits: 10 });
    const response = await agent(h, key, { query: '  Acme ' });
    expect(response.statusCode, response.body).toBe(200);
    expect(json(response)).toEqual({
      company: 'Acme',
      results: [ACME_RESULT],
      profile: {
        name: 'Acme',
        domain: 'acme.com',
        description: 'Anvils',
        industry: 'Manufacturing',
        status: null,
        employee_count: 1200,
        revenue: null,
        country: 'US',
        website: 'https://acme.com',
        ticker: 'ACME',
        linkedin: 'https://www.linkedin.com/company/acme',
        officers: [],
        shareholders: [],
      },
      total: 1,
      credits: 1,
    });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(9);
  });

  it.each([
    ['a domain in a URL', 'https://www.globex.com/about', ['Globex Corporation']],
    ['a subdomain', 'shop.globex.com', ['Globex Corporation']],
    ['a legal form', 'ACME, Inc.', ['Acme']],
    ['a legal form the directory leaves out', 'Globex', ['Globex Corporation']],
    ['several companies of one name in other legal forms', 'Initech AG', ['Initech', 'Initech GmbH', 'Initech Ltd']],
  ])('finds %s (%j), charging 1 credit per result returned', async (_what, query, names) => {
    const h = await harness();
    const { id, key } = await newAccount(h, { credits: 10 });
    const body = json(await agent(h, key, { query }));
    expect(body.results.map((r: { name: string }) => r.name)).toEqual(names);
    expect(body).toMatchObject({ company: query, total: names.length, credits: names.length, profile: { name: names[0] } });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(10 - names.length);
    expect((await h.engine.deps.billing.ledger(id)).at(-1)).toMatchObject({ delta: -names.length, reason: 'charge', kind: 'company' });
  });

  it.each(['Nonexistent Holdings', 'Globx Corporation', 'acm'])('answers %j, which nothing matches confidently, with an empty list, a null profile and 0 credits', async (query) => {
    const h = await harness();
    const { id, key } = await newAccount(h, { credits: 10 });
    const response = await agent(h, key, { query });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toEqual({ company: query, results: [], profile: null, total: 0, credits: 0 });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(10);
  });

  it('gives an account as many results as it can pay for, then answers 402 and charges nothing', async () => {
    const h = await harness();
    const { id, key } = await newAccount(h, { credits: 2 });
    const capped = json(await agent(h, key, { query: 'Initech AG' }));
    expect(capped).toMatchObject({ total: 2, credits: 2 });
    expect(capped.results.map((r: { name: string }) => r.name)).toEqual(['Initech', 'Initech GmbH']);
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(0);

    for (const query of ['Acme', 'Nonexistent Holdings']) {
      const broke = await agent(h, key, { query });
      expect(broke.statusCode).toBe(402);
      expect(json(broke)).toEqual({ error: 'Insufficient credits. Please top up your account.', code: 'insufficient_credits' });
    }
    expect((await h.engine.deps.billing.ledger(id)).filter((l) => l.reason === 'charge')).toHaveLength(1);
  });

  it('refuses a missing or overlong query with 400 (free), and a bad key with the agent body', async () => {
    const h = await harness();
    const { id, key } = await newAccount(h, { credits: 10 });
    expect((await agent(h, key, {})).statusCode).toBe(400);
    expect((await agent(h, key, { query: '   ' })).statusCode).toBe(400);
    const long = await agent(h, key, { query: 'x'.repeat(201) });
    expect(long.statusCode).toBe(400);
    expect(json(long)).toMatchObject({ code: 'company_too_long' });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(10);

    for (const headers of [bearer('sluice_nope'), {}]) {
      const response = await h.app.inject({ method: 'POST', url: '/api/agent/company', headers, payload: { query: 'Acme' } });
      expect(response.statusCode).toBe(401);
      expect(json(response)).toEqual({ c: 401, m: 'bad key' });
    }
  });
});

describe('POST /api/bulk-company-search', () => {
  it('answers each query with a company or null, at 1 credit per query (spec 8), a query that found none included', async () => {
    const h = await harness();
    const { id, key } = await newAccount(h, { credits: 10 });
    const response = await bulk(h, key, { queries: ['Acme', 'globex.com', 'Nonexistent Holdings', 'Acme'] });
    expect(response.statusCode, response.body).toBe(200);
    expect(json(response)).toEqual({
      results: [
        { query: 'Acme', company: { name: 'Acme', industry: 'Manufacturing', size: 1200, domain: 'acme.com', country: 'US', website: 'https://acme.com', score: 1 } },
        { query: 'globex.com', company: { name: 'Globex Corporation', industry: 'Conglomerate', size: 50000, domain: 'globex.com', country: 'US', website: 'https://globex.com', score: 1 } },
        { query: 'Nonexistent Holdings', company: null },
        { query: 'Acme', company: { name: 'Acme', industry: 'Manufacturing', size: 1200, domain: 'acme.com', country: 'US', website: 'https://acme.com', score: 1 } },
      ],
      credits_used: 4,
    });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(6);
  });

  it('charges nothing when the search fails for a while (a transient failure is free), and 1 per query once it runs', async () => {
    const h = await harness();
    const { id, key } = await newAccount(h, { credits: 10 });
    const providers = h.engine.deps.providers as Map<string, LookupProvider>;
    const real = providers.get('company')!;
    providers.set('company', { ...real, name: 'failing-company', lookup: async () => { throw new Error('connection reset'); } });
    const failed = await bulk(h, key, { queries: ['Acme', 'Nonexistent Holdings'] });
    expect([502, 503]).toContain(failed.statusCode);
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(10);
    providers.set('company', real);
    const ran = await bulk(h, key, { queries: ['Acme', 'Nonexistent Holdings'] });
    expect(json(ran).credits_used).toBe(2);
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(8);
  });

  it('takes 100 queries and refuses 101, an empty list or a blank query with 422, charging nothing', async () => {
    const h = await harness();
    const { id, key } = await newAccount(h, { credits: 1000 });
    for (const queries of [Array(101).fill('Acme'), [], ['Acme', '  '], ['Acme', 7], 'Acme']) {
      const response = await bulk(h, key, { queries });
      expect(response.statusCode, JSON.stringify(queries).slice(0, 40)).toBe(422);
      expect(json(response).error).toMatch(/^Invalid request/);
    }
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(1000);
    const full = await bulk(h, key, { queries: Array.from({ length: 100 }, (_, i) => (i % 2 === 0 ? 'Acme' : `Company ${i}`)) });
    expect(full.statusCode).toBe(200);
    expect(json(full)).toMatchObject({ credits_used: 100 });
    expect(json(full).results).toHaveLength(100);
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(900);
  });

  it('is all or nothing: 402 when the balance cannot cover every query; 401 in the standard shape', async () => {
    const h = await harness();
    const { id, key } = await newAccount(h, { credits: 2 });
    const response = await bulk(h, key, { queries: ['Acme', 'Globex', 'Initech'] });
    expect(response.statusCode).toBe(402);
    expect(json(response)).toMatchObject({ code: 'insufficient_credits' });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(2);
    expect((await bulk(h, key, { queries: ['Acme', 'Globex'] })).statusCode).toBe(200);
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(0);

    const anonymous = await h.app.inject({ method: 'POST', url: '/api/bulk-company-search', payload: { queries: ['Acme'] } });
    expect(anonymous.statusCode).toBe(401);
    expect(json(anonymous)).toEqual({ error: 'Unauthorized' });
  });
});
