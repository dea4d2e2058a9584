import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { coreName, nameKey } from '../../src/lookups/company/company-names.js';
import { bearer, closeHarnesses, json, newAccount, openStoreHarness, type ApiHarness } from '../support/api-harness.js';
import { domainWorldEnv, startDomainWorld, type DomainWorld } from '../support/domain-world.js';
import { TEST_STORES } from '../support/test-engine.js';

let world: DomainWorld;
beforeAll(async () => {
  world = await startDomainWorld();
});
afterAll(async () => world.stop());
afterEach(closeHarnesses);

async function harness(kind: (typeof TEST_STORES)[number]): Promise<ApiHarness> {
  const h = await openStoreHarness(kind, domainWorldEnv(world));
  await h.engine.deps.store.companies.upsert([
    { name: 'Site Inc', nameKey: nameKey('Site Inc'), coreKey: coreName('Site Inc'), domain: 'site.test', description: null, industry: 'Software', employeeCount: 40, country: 'DE', website: 'https://site.test', extra: null },
  ]);
  return h;
}

const agent = (h: ApiHarness, key: string, payload: unknown) => h.app.inject({ method: 'POST', url: '/api/agent/domain', headers: bearer(key), payload: payload as object });
const bulk = (h: ApiHarness, key: string, payload: unknown) => h.app.inject({ method: 'POST', url: '/api/bulk-domain-search', headers: bearer(key), payload: payload as object });

describe.each(TEST_STORES)('domain report routes on %s', (kind) => {
  it('POST /api/agent/domain answers the report with the company from the directory, 1 credit per lookup, repeats included', async () => {
    const h = await harness(kind);
    const { id, key } = await newAccount(h, { credits: 10 });
    const response = await agent(h, key, { domain: 'https://Site.Test/' });
    expect(response.statusCode, response.body).toBe(200);
    const body = json(response);
    expect(body).toMatchObject({ query: 'https://Site.Test/', domain: 'site.test', exists: true, credits: 1 });
    expect(body.dns.NS.values).toEqual(['ns1.site.test', 'ns2.site.test']);
    expect(body.dns.SOA.values[0]).toMatch(/^ns1\.site\.test hostmaster\.site\.test 2026010101 /);
    expect(body.registration).toMatchObject({ status: 'ok', registrar: 'Example Registrar, Inc.', expires_at: '2030-01-01T00:00:00Z' });
    expect(body.company).toMatchObject({ name: 'Site Inc', domain: 'site.test', industry: 'Software' });
    expect(body.subdomains.names.map((s: { name: string; owner_era: string }) => `${s.name} ${s.owner_era}`)).toEqual(['api.site.test current', 'old.site.test previous', 'www.site.test current']);
    expect(body.discovery.filter((f: { status: string }) => f.status === 'found').map((f: { path: string }) => f.path)).toEqual(['/robots.txt', '/.well-known/security.txt', '/llms.txt']);
    expect(await h.engine.deps.billing.available(id)).toBe(9);
    expect((await agent(h, key, { domain: 'site.test' })).statusCode).toBe(200);
    expect(await h.engine.deps.billing.available(id)).toBe(8);
  });

  it('POST /api/agent/domain refuses a non-domain with invalid_domain, free', async () => {
    const h = await harness(kind);
    const { id, key } = await newAccount(h, { credits: 3 });
    const response = await agent(h, key, { domain: 'no spaces.allowed' });
    expect(response.statusCode).toBe(400);
    expect(json(response).code).toBe('invalid_domain');
    expect(await h.engine.deps.billing.available(id)).toBe(3);
  });

  it('POST /api/bulk-domain-search answers per item, errors free, a duplicate looked up once, paid in order while the balance lasts', async () => {
    const h = await harness(kind);
    const { id, key } = await newAccount(h, { credits: 2 });
    const before = world.requests.rdap.length;
    const response = await bulk(h, key, { queries: ['site.test', 'not a domain', 'plain.test', 'SITE.test'] });
    expect(response.statusCode, response.body).toBe(200);
    const body = json(response);
    expect(body.credits_used).toBe(2);
    expect(body.results.map((r: { query: string; domain?: string; error?: { code: string } }) => [r.query, r.domain ?? r.error?.code])).toEqual([
      ['site.test', 'site.test'],
      ['not a domain', 'invalid_domain'],
      ['plain.test', 'plain.test'],
      ['SITE.test', 'insufficient_credits'],
    ]);
    expect(world.requests.rdap.length - before).toBe(2); // site.test and plain.test, each once
    expect(await h.engine.deps.billing.available(id)).toBe(0);
    expect((await bulk(h, key, { queries: ['site.test'] })).statusCode).toBe(402);
  });
});
