import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UdpDnsResolver } from '../../src/lookups/dns/udp-dns-resolver.js';
import { parseDnsServers } from '../../src/lookups/dns/dns-resolver.js';
import { guardedGet, type GuardedGetOptions } from '../../src/lookups/enrich/guarded-get.js';
import { RdapClient } from '../../src/lookups/enrich/rdap-client.js';
import { RemoteLookupProvider } from '../../src/lookups/remote/remote-provider.js';
import { CT_SUBDOMAINS_KIND } from '../../src/lookups/domain/ct-subdomains.js';
import { buildDomainReport, DomainReportProvider, type DomainReportDeps } from '../../src/lookups/domain/domain-report.js';
import { normaliseDomain } from '../../src/lookups/domain/domain-name.js';
import { startDomainWorld, type DomainWorld } from '../support/domain-world.js';

const NOW = Date.parse('2026-11-27T00:00:00Z');
let world: DomainWorld;

function depsFor(w: DomainWorld, over: Partial<DomainReportDeps> = {}, allowPrivate = true): DomainReportDeps {
  const resolver = new UdpDnsResolver({ servers: parseDnsServers(w.dnsServer), timeoutMs: 5_000, tries: 2 });
  const fetch: GuardedGetOptions = { resolver, blockedReason: (ip) => (ip.startsWith('127.') || ip === '::1' ? 'loopback' : undefined), allowPrivate, ca: w.caPem, timeoutMs: 2_000, maxBytes: 100_000, httpsPort: w.httpsPort };
  const getJson = async (url: string): Promise<unknown> => {
    const got = await guardedGet(url, { ...fetch, httpsPort: undefined });
    if (!got.ok) throw new Error(got.error);
    return got.status === 200 ? JSON.parse(got.body) : undefined;
  };
  return {
    resolver,
    fetch,
    rdap: new RdapClient({ bootstrap: w.rdapBootstrap, getJson, now: () => NOW }),
    ct: new RemoteLookupProvider({ kind: CT_SUBDOMAINS_KIND, baseUrl: w.ctUrl, authHeader: 'Bearer ct-key', timeoutMs: 2_000, connections: 2 }),
    company: async (d) => (d === 'site.test' ? { name: 'Site Inc', domain: 'site.test' } : null),
    now: () => NOW,
    ...over,
  };
}

beforeAll(async () => {
  world = await startDomainWorld();
});
afterAll(async () => {
  await world.stop();
});

describe('domain report', () => {
  it('reads every DNS record type, the mail-auth records, RDAP, CT, the company and discovery files', async () => {
    const report = await buildDomainReport(depsFor(world), 'site.test');
    expect(report.exists).toBe(true);
    expect(report.dns.A.values).toEqual(['127.0.0.1']);
    expect(report.dns.AAAA.values).toEqual(['::1']);
    expect(report.dns.MX.values).toEqual(['10 mx.site.test']);
    expect(report.dns.NS.values).toEqual(['ns1.site.test', 'ns2.site.test']);
    expect(report.dns.TXT.values).toEqual(['google-site-verification=xyz', 'v=spf1 mx -all']);
    expect(report.dns.CAA.values).toEqual(['0 iodef "mailto:ca@site.test"', '0 issue "letsencrypt.org"']);
    expect(report.dns.SOA.values).toEqual(['ns1.site.test hostmaster.site.test 2026010101 7200 3600 1209600 300']);
    const auth = report.email_auth as Record<string, any>;
    expect(auth.spf.result).toBe('pass'); // the MX 127.0.0.55 is allowed by `mx`
    expect(auth.dmarc.policy).toBe('quarantine');
    expect(auth.mta_sts.policy.mode).toBe('enforce');
    expect(auth.tls_rpt.rua).toEqual(['mailto:tls@site.test']);
    expect(auth.bimi.logo_url).toBe('https://site.test/logo.svg');
    expect(report.registration).toMatchObject({ status: 'ok', registrar: 'Example Registrar, Inc.', created_at: '2020-01-01T00:00:00Z', expires_at: '2030-01-01T00:00:00Z', nameservers: ['ns1.site.test', 'ns2.site.test'], dnssec: true });
    expect((report.registration as { age_days: number }).age_days).toBe(Math.floor((NOW - Date.parse('2020-01-01T00:00:00Z')) / 86_400_000));
    expect(report.company).toEqual({ name: 'Site Inc', domain: 'site.test' });
    // Out-of-domain names are dropped, wildcards unwrapped; a name seen before the registration is `previous`.
    expect(report.subdomains).toEqual({
      status: 'ok',
      names: [
        { name: 'api.site.test', first_seen: '2022-02-01T00:00:00.000Z', owner_era: 'current' },
        { name: 'old.site.test', first_seen: '2018-03-01T00:00:00.000Z', owner_era: 'previous' },
        { name: 'www.site.test', first_seen: '2021-05-01T00:00:00.000Z', owner_era: 'current' },
      ],
    });
    expect(world.requests.ct.at(-1)).toBe('/v1/lookups/ct_subdomains Bearer ct-key');
    const byPath = new Map(report.discovery.map((f) => [f.path, f]));
    expect(byPath.get('/robots.txt')).toMatchObject({ status: 'found', http_status: 200, fields: { 'user-agent': ['*'], sitemap: ['https://site.test/sitemap.xml'] } });
    expect(byPath.get('/.well-known/security.txt')?.fields).toEqual({ contact: ['mailto:security@site.test'], expires: ['2030-01-01T00:00:00.000Z'] });
    expect(byPath.get('/llms.txt')).toMatchObject({ status: 'found', bytes: 22 });
    expect(byPath.get('/.well-known/ai-plugin.json')).toMatchObject({ status: 'missing', http_status: 404 });
  });

  it('answers what it can when parts are absent: no registry entry, no CT service, no mail records', async () => {
    const report = await buildDomainReport(depsFor(world, { ct: undefined }), 'plain.test');
    expect(report.dns.A.values).toEqual(['127.0.0.1']);
    expect(report.dns.MX).toEqual({ values: [], error: null });
    expect(report.registration).toEqual({ status: 'unknown', reason: 'not_found' });
    expect(report.subdomains).toBeUndefined();
    expect((report.email_auth as any).spf.record).toBeNull();
    expect(report.company).toBeNull();
  });

  it('says dns_error for a failing server instead of reporting no records', async () => {
    world.dns.set('broken.test', { rcode: 'SERVFAIL' });
    const report = await buildDomainReport(depsFor(world, { ct: undefined, rdap: undefined }), 'broken.test');
    expect(report.dns.A).toEqual({ values: [], error: 'dns_error' });
    expect(report.exists).toBe(true);
    expect(report.registration).toEqual({ status: 'unknown', reason: 'not_configured' });
  });

  it('fetches discovery files only under the address policy', async () => {
    const report = await buildDomainReport(depsFor(world, { ct: undefined }, false), 'site.test');
    expect(report.discovery.every((f) => f.status === 'error' && f.error === 'blocked_address')).toBe(true);
  });

  it('a CT service that fails leaves subdomains unknown, the rest answered', async () => {
    const ct = new RemoteLookupProvider({ kind: CT_SUBDOMAINS_KIND, baseUrl: 'http://127.0.0.1:9/nothing', timeoutMs: 500, connections: 1 });
    const report = await buildDomainReport(depsFor(world, { ct }), 'site.test');
    expect(report.subdomains?.status).toBe('unknown');
    expect(report.dns.A.values).toEqual(['127.0.0.1']);
  });

  it('the provider refuses a non-domain with invalid_domain and normalises the rest', async () => {
    const provider = new DomainReportProvider(depsFor(world, { ct: undefined }));
    const [bad, good] = await provider.lookup(['not a domain', 'https://SITE.test./path']);
    expect(bad).toMatchObject({ ok: false, retryable: false, code: 'invalid_domain' });
    expect(good).toMatchObject({ ok: true, result: { domain: 'site.test' } });
    expect(normaliseDomain('bücher.de')).toEqual({ ok: true, domain: 'xn--bcher-kva.de' });
    expect(normaliseDomain('192.168.0.1').ok).toBe(false);
  });
});
