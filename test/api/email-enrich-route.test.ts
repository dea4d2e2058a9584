import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { importBreaches } from '../../src/cli/import-command.js';
import { gravatarHash } from '../../src/lookups/enrich/gravatar.js';
import { guardedGet } from '../../src/lookups/enrich/guarded-get.js';
import { DKIM_SELECTORS } from '../../src/lookups/enrich/mail-auth-records.js';
import { blockedReason } from '../../src/webhooks/address-policy.js';
import type { StoreKind } from '../../src/storage/store.js';
import { bearer, closeHarnesses, json, newAccount, openStoreHarness, type ApiHarness } from '../support/api-harness.js';
import { GRAVATAR_ANN, startEnrichWorld, TRUST_POLICY, type EnrichWorld } from '../support/enrich-world.js';
import { TEST_STORES } from '../support/test-engine.js';

const URL = '/api/email/validity/enrich';
const BREACHES = ['email,breach,breached_at,data_classes', 'ann@trust.test,LinkedIn,2021-06-01,Email addresses;Passwords', 'ann@trust.test,Adobe,2013-10-04,Email addresses;Password hints'].join('\n');
let world: EnrichWorld;

beforeAll(async () => {
  world = await startEnrichWorld();
});
afterEach(async () => {
  await closeHarnesses();
  expect(world.smtp.reduce((n, s) => n + s.dataAttempts, 0)).toBe(0);
});
afterAll(() => world.stop());

const post = (h: ApiHarness, token: string, payload: unknown, url = URL) => h.app.inject({ method: 'POST', url, headers: bearer(token), payload: payload as Record<string, unknown> });

describe.each(TEST_STORES)('POST /api/email/validity/enrich on %s', (store: StoreKind) => {
  it('answers every field for a domain that has everything, free, with the STARTTLS evidence of a verification in the window', async () => {
    const h = await openStoreHarness(store, world.env);
    await importBreaches(h.engine.deps.store, Readable.from([Buffer.from(BREACHES)]), { maxLineBytes: 65_536 });
    const { id, key } = await newAccount(h, { credits: 3 });
    // The verifier's evidence: a paid validity lookup of the address (1 credit) records its STARTTLS.
    const verified = json(await post(h, key, { email: 'ann@trust.test' }, '/api/lookup/email/validity'));
    expect(verified).toMatchObject({ status: 'valid', credits: 1, smtp: { host: 'mx.trust.test' } });
    const tls = verified.smtp.tls;
    expect(tls).not.toBeNull();
    const rdapBefore = world.requests.rdap.length;

    const response = await post(h, key, { email: 'Ann@Trust.test' });
    expect(response.statusCode, response.body).toBe(200);
    const body = json(response);
    const now = h.engine.deps.clock.now();
    const expires = Date.parse(tls.valid_to);
    expect(body).toEqual({
      email: 'ann@trust.test',
      canonical: 'ann@trust.test',
      free_provider: false,
      mx: ['mx.trust.test'],
      domain_trust: {
        grade: 'A',
        score: 100,
        spf: { record: 'v=spf1 mx -all', result: 'pass', checked_ip: '127.0.0.31', lookups: 1, void_lookups: 0, lookup_limit: 10, void_limit: 2, error: null },
        dmarc: { record: 'v=DMARC1; p=reject; adkim=s; aspf=s; rua=mailto:dmarc@trust.test', found_at: 'trust.test', policy: 'reject', subdomain_policy: 'reject', adkim: 's', aspf: 's', pct: 100, rua: ['mailto:dmarc@trust.test'], error: null },
        dmarc_policy: 'reject',
        mta_sts: { record: 'v=STSv1; id=20260101T000000', id: '20260101T000000', policy: { mode: 'enforce', mx: ['mx.trust.test'], max_age: 86400, error: null }, error: null },
        tls_rpt: { record: 'v=TLSRPTv1; rua=mailto:tlsrpt@trust.test', rua: ['mailto:tlsrpt@trust.test'], error: null },
        dkim: { status: 'found', selectors: [{ selector: 'selector1', record: 'v=DKIM1; k=rsa; p=MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC', key_type: 'rsa' }], probed: [...DKIM_SELECTORS] },
        bimi: { record: 'v=BIMI1; l=https://trust.test/logo.svg; a=https://trust.test/vmc.pem', logo_url: 'https://trust.test/logo.svg', authority_url: 'https://trust.test/vmc.pem', error: null },
        dnssec: 'secure',
        records: {
          mx: ['10 mx.trust.test'],
          txt: ['v=spf1 mx -all', 'site-verification=abc'],
          dmarc: ['v=DMARC1; p=reject; adkim=s; aspf=s; rua=mailto:dmarc@trust.test'],
          mta_sts: ['v=STSv1; id=20260101T000000'],
          tls_rpt: ['v=TLSRPTv1; rua=mailto:tlsrpt@trust.test'],
          bimi: ['v=BIMI1; l=https://trust.test/logo.svg; a=https://trust.test/vmc.pem'],
          dkim: ['selector1: v=DKIM1; k=rsa; p=MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC'],
        },
      },
      domain_info: {
        registrar: 'Example Registrar, Inc.',
        created_at: '2015-03-01T00:00:00Z',
        expires_at: '2030-03-01T00:00:00Z',
        age_days: Math.floor((now - Date.parse('2015-03-01T00:00:00Z')) / 86_400_000),
        nameservers: ['ns1.trust.test', 'ns2.trust.test'],
        dnssec: true,
        registrant_country: 'US',
        a: ['127.0.0.40'],
      },
      mail_servers: [
        {
          host: 'mx.trust.test',
          ip: '127.0.0.31',
          blocklisted: true,
          blocklists: ['bl.test'],
          tls_issuer: tls.issuer,
          tls_expires_at: new Date(expires).toISOString(),
          tls_days_left: Math.floor((expires - now) / 86_400_000),
        },
      ],
      footprint: {
        breaches: { count: 2, exposed_data: ['Email addresses', 'Password hints', 'Passwords'], services: ['Adobe', 'LinkedIn'] },
        gravatar_url: GRAVATAR_ANN.avatar_url,
        gravatar_profile: { display_name: 'Ann Example', profile_url: 'https://gravatar.com/annexample', location: 'Berlin' },
      },
    });
    expect(typeof tls.issuer).toBe('string');
    // Free: the only credit spent is the validity lookup's.
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(2);
    // The policy came over HTTPS from mta-sts.<domain>, verified against the test CA; RDAP through the bootstrap.
    expect(world.requests.mtaSts).toContain('mta-sts.trust.test/.well-known/mta-sts.txt');
    expect(world.requests.rdap.slice(rdapBefore)).toEqual(['/rdap/domain/trust.test']);
    expect(world.requests.gravatar).toContain(`/v3/profiles/${gravatarHash('ann@trust.test')}`);
    expect(TRUST_POLICY).toContain('mode: enforce');
  });

  it('a domain with only an MX grades F, says dkim unknown (never fail) and leaves out what it could not learn; a session token works as well as a key', async () => {
    const h = await openStoreHarness(store, world.env);
    const account = await newAccount(h, { credits: 0 });
    const login = await h.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: account.email, password: account.password } });
    expect(login.statusCode, login.body).toBe(200);
    const token = json(login).token as string;
    const response = await post(h, token, { email: 'bo@bare.test' });
    expect(response.statusCode, response.body).toBe(200);
    expect(json(response)).toEqual({
      email: 'bo@bare.test',
      canonical: 'bo@bare.test',
      free_provider: false,
      mx: ['mx.bare.test'],
      domain_trust: {
        grade: 'F',
        score: 0,
        spf: { record: null, result: 'none', checked_ip: '127.0.0.32', lookups: 0, void_lookups: 0, lookup_limit: 10, void_limit: 2, error: null },
        dmarc: { record: null, found_at: null, policy: null, subdomain_policy: null, adkim: 'r', aspf: 'r', pct: 100, rua: [], error: null },
        dmarc_policy: null,
        mta_sts: { record: null, id: null, policy: null, error: null },
        tls_rpt: { record: null, rua: [], error: null },
        dkim: { status: 'unknown', selectors: [], probed: [...DKIM_SELECTORS] },
        bimi: { record: null, logo_url: null, authority_url: null, error: null },
        dnssec: 'insecure',
        records: { mx: ['5 mx.bare.test'], txt: [], dmarc: [], mta_sts: [], tls_rpt: [], bimi: [], dkim: [] },
      },
      mail_servers: [{ host: 'mx.bare.test', ip: '127.0.0.32', blocklisted: false, blocklists: [] }],
      footprint: { breaches: { count: 0, exposed_data: [], services: [] } },
    });
    // A repeat within SLUICE_ENRICH_CACHE_SECONDS comes from the result cache: no DNS query, `cached: true`.
    const queries = world.dns.queries;
    const again = json(await post(h, token, { email: 'BO@bare.test' }));
    expect(again).toEqual({ ...json(response), cached: true });
    expect(world.dns.queries).toBe(queries);
    // Gmail gets its canonical form and the free-provider flag, from DNS nobody answers here.
    const gmail = json(await post(h, token, { email: 'J.Doe+news@gmail.com' }));
    expect(gmail).toMatchObject({ email: 'j.doe+news@gmail.com', canonical: 'jdoe@gmail.com', free_provider: true, mx: [] });
    expect(gmail.cached).toBeUndefined();
  });

  it('with SLUICE_ENRICH_CACHE_SECONDS=0 every report is built afresh and never says cached', async () => {
    const h = await openStoreHarness(store, { ...world.env, SLUICE_ENRICH_CACHE_SECONDS: '0' });
    const { key } = await newAccount(h, { credits: 0 });
    const first = json(await post(h, key, { email: 'bo@bare.test' }));
    const queries = world.dns.queries;
    const second = json(await post(h, key, { email: 'bo@bare.test' }));
    expect(second).toEqual(first);
    expect(second.cached).toBeUndefined();
    expect(world.dns.queries).toBeGreaterThan(queries);
  });

  it('refuses bad input with stable codes and no credential with 401', async () => {
    const h = await openStoreHarness(store, world.env);
    const { key } = await newAccount(h, { credits: 0 });
    const bad = await post(h, key, { email: 'not an email' });
    expect(bad.statusCode).toBe(400);
    expect(json(bad)).toMatchObject({ code: 'invalid_email' });
    expect((await post(h, key, {})).statusCode).toBe(422);
    const anonymous = await post(h, 'sk_nope', { email: 'ann@trust.test' });
    expect(anonymous.statusCode).toBe(401);
    expect(json(anonymous)).toEqual({ error: 'Unauthorized' });
  });
});

describe('HTTPS fetches of the enrich report', () => {
  it('obey the webhook address policy: a loopback MTA-STS host is not connected to unless allowed', async () => {
    const { UdpDnsResolver } = await import('../../src/lookups/dns/udp-dns-resolver.js');
    const { parseDnsServers } = await import('../../src/lookups/dns/dns-resolver.js');
    const resolver = new UdpDnsResolver({ servers: parseDnsServers(world.env.SLUICE_DNS_SERVERS!), timeoutMs: 500, tries: 1 });
    const before = world.requests.mtaSts.length;
    const options = { resolver, blockedReason, allowPrivate: false, timeoutMs: 1_000, maxBytes: 10_000, httpsPort: Number(world.env.SLUICE_ENRICH_HTTPS_PORT) };
    expect(await guardedGet('https://mta-sts.trust.test/.well-known/mta-sts.txt', options)).toEqual({ ok: false, error: 'blocked_address' });
    expect(world.requests.mtaSts.length).toBe(before);
    // Allowed, but without the test CA the certificate is not trusted.
    expect(await guardedGet('https://mta-sts.trust.test/.well-known/mta-sts.txt', { ...options, allowPrivate: true })).toEqual({ ok: false, error: 'tls_error' });
  });
});
