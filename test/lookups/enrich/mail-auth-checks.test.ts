import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDnsServers } from '../../../src/lookups/dns/dns-resolver.js';
import { UdpDnsResolver } from '../../../src/lookups/dns/udp-dns-resolver.js';
import { checkDmarc } from '../../../src/lookups/enrich/dmarc-check.js';
import { dnsblListings } from '../../../src/lookups/enrich/dnsbl.js';
import { probeDnssec } from '../../../src/lookups/enrich/dnssec-probe.js';
import { gradeDomain } from '../../../src/lookups/enrich/domain-grade.js';
import { DKIM_SELECTORS, probeDkim } from '../../../src/lookups/enrich/mail-auth-records.js';
import { parseMtaStsPolicy } from '../../../src/lookups/enrich/mta-sts-policy.js';
import { checkSpf, type SpfReport } from '../../../src/lookups/enrich/spf-check.js';
import { DnsFake } from '../../support/dns-fake.js';

// Every query goes to a DNS fake on loopback through the real UDP client of the shared DNS layer.
const dns = new DnsFake();
let resolver: UdpDnsResolver;
let server: string;

beforeAll(async () => {
  server = await dns.start();
  resolver = new UdpDnsResolver({ servers: parseDnsServers(server), timeoutMs: 500, tries: 1 });
  dns
    .set('good.test', { txt: ['v=spf1 ip4:192.0.2.0/24 include:_spf.mailer.test -all', 'google-site-verification=x'], ad: true })
    .set('_spf.mailer.test', { txt: ['v=spf1 ip4:198.51.100.7 ~all'] })
    .set('soft.test', { txt: ['v=spf1 a mx ~all'], a: ['198.51.100.9'], mx: [{ preference: 5, exchange: 'mx.soft.test' }] })
    .set('mx.soft.test', { a: ['198.51.100.10'] })
    .set('two.test', { txt: ['v=spf1 -all', 'v=spf1 +all'] })
    .set('voids.test', { txt: ['v=spf1 a:nx1.voids.test a:nx2.voids.test a:nx3.voids.test -all'] })
    .set('redirect.test', { txt: ['v=spf1 redirect=good.test'] })
    .set('macro.test', { txt: ['v=spf1 exists:%{i}.spf.macro.test -all'] })
    .set('down.test', { rcode: 'SERVFAIL' })
    .set('v6.test', { txt: ['v=spf1 ip6:2001:db8:10::/48 a/24 -all'], a: ['198.51.100.200'] });
  // eleven includes, each of a record with one more include at the end: 11 lookups > 10.
  const chain = Array.from({ length: 11 }, (_, i) => `c${i}.chain.test`);
  dns.set('chain.test', { txt: [`v=spf1 include:${chain[0]} -all`] });
  chain.forEach((name, i) => dns.set(name, { txt: [i + 1 < chain.length ? `v=spf1 include:${chain[i + 1]} -all` : 'v=spf1 -all'] }));
  dns
    .set('_dmarc.good.test', { txt: ['v=DMARC1; p=reject; sp=quarantine; adkim=s; aspf=s; pct=100; rua=mailto:d@good.test, mailto:e@good.test'] })
    .set('_dmarc.example.co.uk', { txt: ['v=DMARC1; p=quarantine; sp=none; pct=50'] })
    .set('_dmarc.bad.test', { txt: ['v=DMARC1; p=maybe'] })
    .set('selector1._domainkey.good.test', { txt: ['v=DKIM1; k=rsa; p=MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC'] })
    .set('s1._domainkey.good.test', { txt: ['v=DKIM1; k=ed25519; p=11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo='] })
    .set('default._domainkey.revoked.test', { txt: ['v=DKIM1; p='] })
    .set('2.0.0.127.bl.test', { a: ['127.0.0.2'] })
    .set('revoked.test', {});
});
afterAll(() => dns.stop());

describe('SPF, evaluated over the shared DNS layer', () => {
  const base = { lookup_limit: 10, void_limit: 2 };
  it.each<[string, string | null, Partial<SpfReport>]>([
    ['good.test', '198.51.100.7', { result: 'pass', lookups: 1, void_lookups: 0, error: null, record: 'v=spf1 ip4:192.0.2.0/24 include:_spf.mailer.test -all' }],
    ['good.test', '192.0.2.44', { result: 'pass', lookups: 0, void_lookups: 0 }],
    ['good.test', '203.0.113.1', { result: 'fail', lookups: 1 }],
    ['good.test', null, { result: 'fail', lookups: 1, checked_ip: null }],
    ['soft.test', '198.51.100.10', { result: 'pass', lookups: 2 }],
    ['soft.test', '203.0.113.1', { result: 'softfail', lookups: 2 }],
    ['two.test', null, { result: 'permerror', error: 'multiple_records', record: null, lookups: 0 }],
    ['voids.test', '203.0.113.1', { result: 'permerror', error: 'too_many_void_lookups', lookups: 3, void_lookups: 3 }],
    ['chain.test', '203.0.113.1', { result: 'permerror', error: 'too_many_lookups', lookups: 11 }],
    ['redirect.test', '198.51.100.7', { result: 'pass', lookups: 2 }],
    ['macro.test', '203.0.113.1', { result: 'permerror', error: 'macros_not_supported' }],
    ['v6.test', '2001:db8:11::1', { result: 'fail', lookups: 1, void_lookups: 1 }],
    ['v6.test', '2001:db8:10::25', { result: 'pass', lookups: 0 }],
    ['v6.test', '198.51.100.7', { result: 'pass', lookups: 1 }],
    ['v6.test', '198.51.101.7', { result: 'fail', lookups: 1 }],
    ['nothing.test', '203.0.113.1', { result: 'none', record: null, lookups: 0, error: null }],
    ['down.test', '203.0.113.1', { result: 'temperror', error: 'dns_error' }],
  ])('%s for %s', async (domain, ip, expected) => {
    const report = await checkSpf(resolver, domain, ip);
    expect(report).toMatchObject({ ...base, checked_ip: ip, ...expected });
  });
});

describe('DMARC', () => {
  it('reads the policy and keeps adkim=s and aspf=s strict (mailauth 4.x reads them as relaxed)', async () => {
    expect(await checkDmarc(resolver, 'good.test')).toEqual({
      record: 'v=DMARC1; p=reject; sp=quarantine; adkim=s; aspf=s; pct=100; rua=mailto:d@good.test, mailto:e@good.test',
      found_at: 'good.test',
      policy: 'reject',
      subdomain_policy: 'quarantine',
      adkim: 's',
      aspf: 's',
      pct: 100,
      rua: ['mailto:d@good.test', 'mailto:e@good.test'],
      error: null,
    });
  });
  it('a subdomain without a record falls back to its organisational domain through the Public Suffix List (co.uk is a suffix) and takes sp=', async () => {
    expect(await checkDmarc(resolver, 'mail.example.co.uk')).toEqual({
      record: 'v=DMARC1; p=quarantine; sp=none; pct=50',
      found_at: 'example.co.uk',
      policy: 'none',
      subdomain_policy: 'none',
      adkim: 'r',
      aspf: 'r',
      pct: 50,
      rua: [],
      error: null,
    });
  });
  it('no record, an invalid one, and a failing server are told apart', async () => {
    expect(await checkDmarc(resolver, 'nothing.test')).toMatchObject({ record: null, policy: null, error: null });
    expect(await checkDmarc(resolver, 'bad.test')).toMatchObject({ record: 'v=DMARC1; p=maybe', found_at: 'bad.test', policy: null, error: 'invalid' });
    dns.set('_dmarc.down2.test', { rcode: 'SERVFAIL' });
    expect(await checkDmarc(resolver, 'down2.test')).toMatchObject({ record: null, error: 'dns_error' });
  });
});

describe('DKIM, DNSSEC, DNSBL, MTA-STS policy text', () => {
  it('finds the listed selectors that answer with a key, and says unknown (never fail) when none does or the key is revoked', async () => {
    expect(await probeDkim(resolver, 'good.test')).toEqual({
      status: 'found',
      selectors: [
        { selector: 'selector1', record: 'v=DKIM1; k=rsa; p=MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC', key_type: 'rsa' },
        { selector: 's1', record: 'v=DKIM1; k=ed25519; p=11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=', key_type: 'ed25519' },
      ],
      probed: DKIM_SELECTORS,
    });
    expect(await probeDkim(resolver, 'revoked.test')).toEqual({ status: 'unknown', selectors: [], probed: DKIM_SELECTORS });
  });
  it('reads the AD flag of a DO-bit query: secure where the resolver validated, insecure where not, unknown with no answer', async () => {
    const servers = parseDnsServers(server);
    expect(await probeDnssec('good.test', servers, 500)).toBe('secure');
    expect(await probeDnssec('soft.test', servers, 500)).toBe('insecure');
    expect(await probeDnssec('good.test', [{ host: '127.0.0.1', port: 9 }], 200)).toBe('unknown');
  });
  it('a DNSBL zone lists an address when <reversed ip>.<zone> has a 127/8 A record', async () => {
    expect(await dnsblListings(resolver, '127.0.0.2', ['bl.test', 'other.test'])).toEqual(['bl.test']);
    expect(await dnsblListings(resolver, '127.0.0.3', ['bl.test'])).toEqual([]);
    expect(await dnsblListings(resolver, '127.0.0.2', [])).toBeNull();
  });
  it('parses RFC 8461 policy text and refuses a malformed one', () => {
    expect(parseMtaStsPolicy('version: STSv1\r\nmode: enforce\r\nmx: mx1.a.test\r\nmx: *.a.test\r\nmax_age: 604800\r\n')).toEqual({ mode: 'enforce', mx: ['mx1.a.test', '*.a.test'], max_age: 604800, error: null });
    expect(parseMtaStsPolicy('version: STSv1\nmode: sometimes\nmax_age: 1')).toEqual({ mode: null, mx: [], max_age: null, error: 'invalid' });
  });
});

describe('the grade rubric', () => {
  const spf = (record: string | null, result: SpfReport['result'] = 'pass'): SpfReport => ({ record, result, checked_ip: null, lookups: 0, void_lookups: 0, lookup_limit: 10, void_limit: 2, error: null });
  const dmarc = (policy: 'none' | 'quarantine' | 'reject' | null, pct = 100) => ({ record: policy === null ? null : 'v=DMARC1', found_at: null, policy, subdomain_policy: policy, adkim: 'r' as const, aspf: 'r' as const, pct, rua: [], error: null });
  const dkim = (found: boolean) => ({ status: found ? ('found' as const) : ('unknown' as const), selectors: [], probed: [] });
  it.each([
    ['everything', { spf: spf('v=spf1 -all'), dmarc: dmarc('reject'), dkim: dkim(true), mtaSts: { record: 'v=STSv1', policy: { mode: 'enforce' as const, mx: [], max_age: 1, error: null } }, tlsRpt: true, bimi: true, dnssec: 'secure' as const }, 'A', 100],
    ['spf, dmarc reject, dkim', { spf: spf('v=spf1 ~all'), dmarc: dmarc('reject'), dkim: dkim(true), mtaSts: { record: null, policy: null }, tlsRpt: false, bimi: false, dnssec: 'insecure' as const }, 'B', 70],
    ['spf and dmarc none', { spf: spf('v=spf1 -all'), dmarc: dmarc('none'), dkim: dkim(false), mtaSts: { record: null, policy: null }, tlsRpt: false, bimi: false, dnssec: 'unknown' as const }, 'D', 35],
    ['quarantine at pct 50, ?all', { spf: spf('v=spf1 ?all', 'neutral'), dmarc: dmarc('quarantine', 50), dkim: dkim(true), mtaSts: { record: 'v=STSv1', policy: { mode: 'testing' as const, mx: [], max_age: 1, error: null } }, tlsRpt: true, bimi: false, dnssec: 'unknown' as const }, 'C', 55],
    ['a broken spf alone', { spf: spf('v=spf1 include:x -all', 'permerror'), dmarc: dmarc(null), dkim: dkim(true), mtaSts: { record: null, policy: null }, tlsRpt: false, bimi: false, dnssec: 'secure' as const }, 'F', 25],
    ['nothing but DNSSEC and DKIM', { spf: spf(null, 'none'), dmarc: dmarc(null), dkim: dkim(true), mtaSts: { record: null, policy: null }, tlsRpt: true, bimi: true, dnssec: 'secure' as const }, 'F', 35],
  ])('%s', (_name, input, grade, score) => {
    expect(gradeDomain(input)).toEqual({ grade, score });
  });
});
