import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { importIpSource } from '../../src/lookups/ip/ip-imports.js';
import type { IpSourceKind } from '../../src/storage/ip-network-records.js';
import type { Store } from '../../src/storage/store.js';
import { AS2ORG_FILE, ASREL_FILE, PFX2AS_NOV, PFX2AS_OCT, RIR_FILE } from '../lookups/ip-network-fixtures.js';
import { bearer, closeHarnesses, json, newAccount, openStoreHarness, type ApiHarness } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';

const NOW = Date.parse('2026-11-20T12:00:00Z');

async function importAll(store: Store): Promise<void> {
  const load = (kind: IpSourceKind, text: string, date?: string) => importIpSource(store.ipNetwork, kind, Readable.from([Buffer.from(text)]), { now: NOW, date });
  await load('rir', RIR_FILE);
  await load('pfx2as', PFX2AS_OCT, '2026-10-01');
  await load('pfx2as', PFX2AS_NOV, '2026-11-01');
  await load('asnames', AS2ORG_FILE, '2026-11-05');
  await load('asrel', ASREL_FILE, '2026-11-03');
}

async function harness(kind: (typeof TEST_STORES)[number], env: Record<string, string> = {}): Promise<ApiHarness> {
  const h = await openStoreHarness(kind, { SLUICE_RATE_LIMIT_PER_MINUTE: '100000', ...env });
  await importAll(h.engine.deps.store);
  return h;
}

const agent = (h: ApiHarness, key: string, payload: unknown) => h.app.inject({ method: 'POST', url: '/api/agent/ip-network', headers: bearer(key), payload: payload as object });
const bulk = (h: ApiHarness, key: string, payload: unknown) => h.app.inject({ method: 'POST', url: '/api/bulk-ip-search', headers: bearer(key), payload: payload as object });
const balance = async (h: ApiHarness, accountId: string) => h.engine.deps.billing.available(accountId);

afterEach(closeHarnesses);

describe.each(TEST_STORES)('IP network routes on %s', (kind) => {
  it('POST /api/agent/ip-network answers every section with its age, and charges 1 credit per lookup, repeats included', async () => {
    const h = await harness(kind);
    const { id, key } = await newAccount(h, { credits: 10 });
    const response = await agent(h, key, { ip: ' 192.0.2.200 ' });
    expect(response.statusCode, response.body).toBe(200);
    expect(json(response)).toEqual({
      query: ' 192.0.2.200 ',
      ip: '192.0.2.200',
      credits: 1,
      network: { cidr: '192.0.2.0/23', rir: 'ripencc', registrant_org: 'Beta Hosting GmbH', allocated_at: '2012-01-02', country: 'DE', status: 'allocated', data_as_of: '2026-11-01' },
      asn: { asn: 64666, origins: [64666], as_set: null, name: 'MALLORY', country: 'RU', data_as_of: '2026-11-01' },
      company: { name: 'Mallory Transit', org_id: 'ORG-EVIL', country: 'RU', data_as_of: '2026-11-05' },
      bgp: { prefix: '192.0.2.0/24', announced: true, origins: [64666], upstreams: [], upstreams_as_of: '2026-11-03', data_as_of: '2026-11-01' },
      routing_history: {
        snapshots: 2,
        first_seen: '2026-10-01',
        origin_changes: [{ date: '2026-11-01', prefix: '192.0.2.0/24', origins: [64666], previous_prefix: '192.0.2.0/23', previous_origins: [64510] }],
        possible_hijack: true,
        hijack: { prefix: '192.0.2.0/24', new_origins: [64666], previous_origin: 64510, covering_prefix: '192.0.2.0/23', since: '2026-11-01' },
        data_as_of: '2026-11-01',
      },
      peering: { peers: [], peer_count: 0, provider_count: 0, customer_count: 0, data_as_of: '2026-11-03' },
    });
    expect(await balance(h, id)).toBe(9);
    const again = await agent(h, key, { ip: '192.0.2.200' });
    expect(json(again)).toMatchObject({ credits: 1, bgp: { upstreams: [] } });
    expect(await balance(h, id)).toBe(8);
    const v6 = json(await agent(h, key, { ip: '2001:db8:100::1' }));
    expect(v6).toMatchObject({ ip: '2001:db8:100::1', bgp: { prefix: '2001:db8:100::/48', origins: [64520, 64667] }, routing_history: { possible_hijack: true } });
    expect(v6).not.toHaveProperty('passive_dns');
  });

  it('refuses a missing or invalid address (400, free), an empty balance (402) and a bad key with the agent shape', async () => {
    const h = await harness(kind);
    const { id, key } = await newAccount(h, { credits: 1 });
    expect(json(await agent(h, key, {}))).toEqual({ error: 'ip is required: an IPv4 or IPv6 address', code: 'invalid_request' });
    const invalid = await agent(h, key, { ip: '192.0.2.0/24' });
    expect(invalid.statusCode).toBe(400);
    expect(json(invalid)).toMatchObject({ code: 'invalid_ip' });
    expect(await balance(h, id)).toBe(1);
    expect((await agent(h, key, { ip: '10.1.2.3' })).statusCode).toBe(200);
    const broke = await agent(h, key, { ip: '10.1.2.3' });
    expect(broke.statusCode).toBe(402);
    expect(json(broke)).toMatchObject({ code: 'insufficient_credits' });
    const unauthorised = await agent(h, 'sk_nope', { ip: '10.1.2.3' });
    expect(unauthorised.statusCode).toBe(401);
    expect(json(unauthorised)).toMatchObject({ c: 401 });
  });

  it('POST /api/bulk-ip-search answers each address or says why not, and charges answered addresses in order while the balance lasts', async () => {
    const h = await harness(kind);
    const { id, key } = await newAccount(h, { credits: 3 });
    const response = await bulk(h, key, { queries: ['198.51.100.7', 'nope', '2001:db8:100::5', '198.51.100.7', '10.3.0.1'] });
    expect(response.statusCode, response.body).toBe(200);
    const body = json(response) as { results: Record<string, unknown>[]; credits_used: number };
    expect(body.credits_used).toBe(3);
    expect(body.results.map((r) => r.query)).toEqual(['198.51.100.7', 'nope', '2001:db8:100::5', '198.51.100.7', '10.3.0.1']);
    expect(body.results[0]).toMatchObject({ ip: '198.51.100.7', credits: 1, bgp: { origins: [64502] }, routing_history: { origin_changes: [{ previous_origins: [64501] }] } });
    expect(body.results[1]).toEqual({ query: 'nope', error: { code: 'invalid_ip', message: expect.stringContaining('IPv4 or IPv6') } });
    expect(body.results[2]).toMatchObject({ ip: '2001:db8:100::5', credits: 1, network: { rir: 'apnic' } });
    expect(body.results[3]).toMatchObject({ ip: '198.51.100.7', credits: 1 });
    expect(body.results[4]).toEqual({ query: '10.3.0.1', error: { code: 'insufficient_credits', message: expect.any(String) } });
    expect(await balance(h, id)).toBe(0);
    expect((await bulk(h, key, { queries: ['10.3.0.1'] })).statusCode).toBe(402);
    expect((await bulk(h, key, { queries: [] })).statusCode).toBe(422);
    expect((await bulk(h, key, { queries: Array.from({ length: 101 }, () => '10.0.0.1') })).statusCode).toBe(422);
  });
}, 60_000);

describe('passive DNS from a remote provider (loopback fake)', () => {
  it('adds the provider\'s records with their date, and says unknown and why when it fails, without failing or refunding the lookup', async () => {
    let fail = false;
    const seen: unknown[] = [];
    const server = http.createServer((request, response) => {
      let text = '';
      request.on('data', (c: Buffer) => (text += c.toString()));
      request.on('end', () => {
        seen.push({ url: request.url, auth: request.headers.authorization, body: JSON.parse(text) });
        if (fail) {
          response.writeHead(400).end('{}');
          return;
        }
        const { keys } = JSON.parse(text) as { keys: string[] };
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ results: keys.map((k) => ({ ok: true, result: { records: [{ name: `host-${k}.example`, first_seen: '2025-01-01', last_seen: '2026-11-01' }], data_as_of: '2026-11-19' } })) }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      const h = await harness('sqlite', { SLUICE_PASSIVE_DNS_URL: `http://127.0.0.1:${port}`, SLUICE_PASSIVE_DNS_AUTH: 'Bearer pdns-test' });
      const { id, key } = await newAccount(h, { credits: 5 });
      const answer = json(await agent(h, key, { ip: '203.0.113.9' }));
      expect(answer).toMatchObject({ ip: '203.0.113.9', credits: 1, bgp: { origins: [64500] } });
      expect(answer.passive_dns).toEqual({ status: 'ok', records: [{ name: 'host-203.0.113.9.example', first_seen: '2025-01-01', last_seen: '2026-11-01' }], data_as_of: '2026-11-19' });
      expect(seen).toEqual([{ url: '/v1/lookups/passive_dns', auth: 'Bearer pdns-test', body: { keys: ['203.0.113.9'] } }]);
      fail = true;
      const degraded = json(await agent(h, key, { ip: '203.0.113.9' }));
      expect(degraded.passive_dns).toEqual({ status: 'unknown', reason: 'lookup_rejected', records: null, data_as_of: null });
      expect(degraded).toMatchObject({ credits: 1, network: { rir: 'arin' } });
      expect(await h.engine.deps.billing.available(id)).toBe(3);
    } finally {
      server.close();
    }
  });
});
