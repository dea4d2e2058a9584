import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { COMPLIANCE_RULES } from '../../src/lookups/compliance/compliance-rules.js';
import { NOT_LEGAL_ADVICE } from '../../src/lookups/compliance/compliance-verdict.js';
import { importIpSource } from '../../src/lookups/ip/ip-imports.js';
import type { IpSourceKind } from '../../src/storage/ip-network-records.js';
import type { Store, StoreKind } from '../../src/storage/store.js';
import { bearer, closeHarnesses, json, newAccount, openStoreHarness, type ApiHarness } from '../support/api-harness.js';
import { startEnrichWorld, type EnrichWorld } from '../support/enrich-world.js';
import { TEST_STORES } from '../support/test-engine.js';

/**
 * enrich's mail_servers[] asn/org/country/hosting and compliance's mail-server country, from IP
 * network data imported the way `sluice import rir|pfx2as|asnames` loads it. The enrich world's
 * mail servers are 127.0.0.31 (mx.trust.test) and 127.0.0.32 (mx.bare.test): the files below
 * delegate and announce those loopback addresses.
 */
const RIR = [
  '2.3|nro|20261101|2|19821213|20261101|+0000',
  'arin|US|ipv4|127.0.0.0|32|20100315|allocated|org-amzn|e-stats',
  'ripencc|DE|ipv4|127.0.0.32|32|20120101|allocated|org-beta|e-stats',
  '',
].join('\n');
// 16509 is in src/lookups/enrich/hosting-asns.json (Amazon Web Services); 64510 is not.
const PFX2AS = ['127.0.0.0\t27\t16509', '127.0.0.32\t27\t64510', ''].join('\n');
const AS2ORG = [
  '# format:org_id|changed|org_name|country|source',
  'ORG-AMZN|20260101|Amazon.com, Inc.|US|ARIN',
  'ORG-BETA|20260101|Beta Mail GmbH|DE|RIPE',
  '# format:aut|changed|aut_name|org_id|opaque_id|source',
  '16509|20260101|AMAZON-02|ORG-AMZN|x|ARIN',
  '64510|20260101|BETA-AS|ORG-BETA|x|RIPE',
  '',
].join('\n');

async function importNetwork(store: Store): Promise<void> {
  const load = (kind: IpSourceKind, text: string, date?: string) => importIpSource(store.ipNetwork, kind, Readable.from([Buffer.from(text)]), { now: Date.parse('2026-11-20T00:00:00Z'), date });
  await load('rir', RIR);
  await load('pfx2as', PFX2AS, '2026-11-01');
  await load('asnames', AS2ORG, '2026-11-05');
}

let world: EnrichWorld;
beforeAll(async () => {
  world = await startEnrichWorld();
});
afterEach(async () => {
  await closeHarnesses();
  expect(world.smtp.reduce((n, s) => n + s.dataAttempts, 0)).toBe(0);
});
afterAll(() => world.stop());

const post = (h: ApiHarness, key: string, url: string, email: string) => h.app.inject({ method: 'POST', url, headers: bearer(key), payload: { email } });
const enrich = async (h: ApiHarness, key: string, email: string) => {
  const response = await post(h, key, '/api/email/validity/enrich', email);
  expect(response.statusCode, response.body).toBe(200);
  return json(response);
};
const law = (id: string) => {
  const { name, jurisdiction, regime, requirements } = COMPLIANCE_RULES.find((r) => r.id === id)!;
  return { id, name, jurisdiction, regime, requirements: [...requirements] };
};

describe.each(TEST_STORES)('mail server networks in enrich and compliance on %s', (store: StoreKind) => {
  it('without imported IP network data the mail servers have no network fields and compliance has no mail-server country', async () => {
    const h = await openStoreHarness(store, world.env);
    const { key } = await newAccount(h, { credits: 5 });
    expect((await enrich(h, key, 'bo@bare.test')).mail_servers).toEqual([{ host: 'mx.bare.test', ip: '127.0.0.32', blocklisted: false, blocklists: [] }]);
    const trust = (await enrich(h, key, 'ann@trust.test')).mail_servers;
    expect(trust).toHaveLength(1);
    for (const field of ['asn', 'org', 'country', 'hosting']) expect(trust[0]).not.toHaveProperty(field);
    const verdict = json(await post(h, key, '/api/lookup/email/compliance', 'bo@bare.test'));
    expect(verdict).toMatchObject({ verdict: 'consent_required', countries: [], reasons: ['no_jurisdiction_signal'] });
    expect(verdict.signals.mail_server_country).toBeNull();
  });

  it('with imported rir, pfx2as and asnames files each mail server gets asn, org, country and hosting, and compliance uses the country', async () => {
    const h = await openStoreHarness(store, world.env);
    await importNetwork(h.engine.deps.store);
    const { id, key } = await newAccount(h, { credits: 5 });
    expect((await enrich(h, key, 'ann@trust.test')).mail_servers).toEqual([
      { host: 'mx.trust.test', ip: '127.0.0.31', asn: 16509, org: 'Amazon.com, Inc.', country: 'US', hosting: true, blocklisted: true, blocklists: ['bl.test'] },
    ]);
    // An AS not in the hosting list is not known to be hosting: null, never false.
    expect((await enrich(h, key, 'bo@bare.test')).mail_servers).toEqual([
      { host: 'mx.bare.test', ip: '127.0.0.32', asn: 64510, org: 'Beta Mail GmbH', country: 'DE', hosting: null, blocklisted: false, blocklists: [] },
    ]);
    // Enrich stays free.
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(5);

    // bare.test has no ccTLD and no registration country: the mail server's country (DE) is the signal.
    const verdict = await post(h, key, '/api/lookup/email/compliance', 'bo@bare.test');
    expect(verdict.statusCode, verdict.body).toBe(200);
    expect(json(verdict)).toEqual({
      email: 'bo@bare.test',
      verdict: 'consent_required',
      legal_to_email: null,
      countries: [{ country: 'DE', source: 'mail_server' }],
      laws: [law('gdpr_eprivacy')],
      reasons: ['mail_server_country_DE', 'gdpr_eprivacy_requires_consent'],
      signals: { cctld_country: null, registration_country: null, mail_server_country: 'DE', role_account: false, disposable: false, free_provider: false, deliverability: 'valid' },
      disclaimer: NOT_LEGAL_ADVICE,
      credits: 1,
    });
  });

  it('a new import is seen by the next report: the server moves to another AS and loses its hosting flag', async () => {
    const h = await openStoreHarness(store, { ...world.env, SLUICE_ENRICH_CACHE_SECONDS: '0' });
    await importNetwork(h.engine.deps.store);
    const { key } = await newAccount(h, { credits: 0 });
    expect((await enrich(h, key, 'ann@trust.test')).mail_servers[0]).toMatchObject({ asn: 16509, hosting: true });
    await importIpSource(h.engine.deps.store.ipNetwork, 'pfx2as', Readable.from([Buffer.from('127.0.0.0\t27\t64510\n')]), { now: Date.parse('2026-11-21T00:00:00Z'), date: '2026-11-02' });
    expect((await enrich(h, key, 'ann@trust.test')).mail_servers[0]).toEqual({
      host: 'mx.trust.test', ip: '127.0.0.31', asn: 64510, org: 'Beta Mail GmbH', country: 'US', hosting: null, blocklisted: true, blocklists: ['bl.test'],
    });
  });
});
