import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddedIpNetwork } from '../../src/lookups/ip/embedded-ip-network.js';
import { importIpSource } from '../../src/lookups/ip/ip-imports.js';
import type { IpNetworkResult } from '../../src/lookups/ip/ip-network-answer.js';
import { parseIp } from '../../src/shared/ip-keys.js';
import type { IpSourceKind } from '../../src/storage/ip-network-records.js';
import type { Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { openTestStore, type TestStore } from '../support/test-store.js';
import { AS2ORG_FILE, ASREL_FILE, PFX2AS_NOV, PFX2AS_OCT, RIR_FILE, SIMPLE_ASNAMES_FILE } from './ip-network-fixtures.js';

const NOW = Date.parse('2026-11-20T12:00:00Z');
/** Cut into small chunks so that lines cross chunk boundaries, as a file stream's do. */
const stream = (text: string) => Readable.from(Array.from({ length: Math.ceil(text.length / 97) }, (_, i) => Buffer.from(text.slice(i * 97, i * 97 + 97))));
const load = (store: Store, kind: IpSourceKind, text: string, date?: string) => importIpSource(store.ipNetwork, kind, stream(text), { now: NOW, date });

async function importAll(store: Store): Promise<void> {
  await load(store, 'rir', RIR_FILE);
  await load(store, 'pfx2as', PFX2AS_OCT, '2026-10-01');
  await load(store, 'pfx2as', PFX2AS_NOV, '2026-11-01');
  await load(store, 'asnames', AS2ORG_FILE, '2026-11-05');
  await load(store, 'asrel', ASREL_FILE, '2026-11-03');
}

async function ask(provider: EmbeddedIpNetwork, ip: string): Promise<IpNetworkResult> {
  const [outcome] = await provider.lookup([ip]);
  if (!outcome?.ok) throw new Error(`lookup of ${ip} failed: ${JSON.stringify(outcome)}`);
  return outcome.result;
}

describe.each(TEST_STORES)('IP network data on %s', (kind) => {
  let opened: TestStore;
  let store: Store;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
  });
  afterEach(() => opened.close());

  it('imports each format, counting skipped and invalid lines by code, and dates each source', async () => {
    const rir = await load(store, 'rir', RIR_FILE);
    expect(rir).toMatchObject({ source: 'rir', data_as_of: '2026-11-01', imported: 3 + 5 + 300, invalid: 2, invalid_by_code: { invalid_prefix: 1, malformed_line: 1 } });
    expect(rir.first_invalid.map((f) => f.code)).toEqual(['invalid_prefix', 'malformed_line']);
    // Header, 3 summaries, the comment, available and reserved space.
    expect(rir.skipped).toBe(7);
    const oct = await load(store, 'pfx2as', PFX2AS_OCT, '2026-10-01');
    expect(oct).toMatchObject({ source: 'pfx2as:2026-10-01', data_as_of: '2026-10-01', imported: 305, invalid: 0 });
    expect(await load(store, 'asnames', AS2ORG_FILE, '2026-11-05')).toMatchObject({ imported: 9, invalid: 1, invalid_by_code: { invalid_asn: 1 }, skipped: 2 });
    expect(await load(store, 'asrel', ASREL_FILE)).toMatchObject({ imported: 6, invalid: 2, data_as_of: '2026-11-20', invalid_by_code: { invalid_asn: 1, malformed_line: 1 } });
    await expect(load(store, 'pfx2as', PFX2AS_NOV)).rejects.toMatchObject({ code: 'bad_argument' });
    await expect(load(store, 'pfx2as', PFX2AS_NOV, '2026-02-30')).rejects.toMatchObject({ code: 'bad_argument' });
    await expect(load(store, 'asrel', '# nothing\nfoo\n')).rejects.toMatchObject({ code: 'no_rows' });
    const sources = await store.ipNetwork.sources();
    expect(sources.map((s) => [s.source, s.dataAsOf, s.rows])).toEqual([
      ['asnames', '2026-11-05', 9],
      ['asrel', '2026-11-20', 6],
      ['pfx2as:2026-10-01', '2026-10-01', 305],
      ['rir', '2026-11-01', 308],
    ]);
  });

  it('answers every section from the imported data, each with the date of its source', async () => {
    await importAll(store);
    const provider = new EmbeddedIpNetwork(store.ipNetwork);
    expect(await ask(provider, '203.0.113.77')).toEqual({
      ip: '203.0.113.77',
      network: { cidr: '203.0.113.0/24', rir: 'arin', registrant_org: 'Acme Networks, Inc.', allocated_at: '2011-04-20', country: 'US', status: 'allocated', data_as_of: '2026-11-01' },
      asn: { asn: 64500, origins: [64500], as_set: null, name: 'ACME-NET', country: 'US', data_as_of: '2026-11-01' },
      company: { name: 'Acme Networks, Inc.', org_id: 'ORG-ACME', country: 'US', data_as_of: '2026-11-05' },
      bgp: {
        prefix: '203.0.113.0/24',
        announced: true,
        origins: [64500],
        upstreams: [
          { asn: 64400, name: 'UPSTREAM-ONE' },
          { asn: 64401, name: null },
        ],
        upstreams_as_of: '2026-11-03',
        data_as_of: '2026-11-01',
      },
      routing_history: { snapshots: 2, first_seen: '2026-10-01', origin_changes: [], possible_hijack: false, hijack: null, data_as_of: '2026-11-01' },
      peering: {
        peers: [
          { asn: 64600, name: null },
          { asn: 64601, name: null },
        ],
        peer_count: 2,
        provider_count: 2,
        customer_count: 1,
        data_as_of: '2026-11-03',
      },
    });
  });

  it('finds origin changes between dated snapshots, and a possible hijack by a more specific prefix or a second origin while the old origin still announces', async () => {
    await importAll(store);
    const provider = new EmbeddedIpNetwork(store.ipNetwork);

    // 64501 handed 198.51.100.0/24 to 64502 and announces nothing any more: a change, no hijack.
    const moved = await ask(provider, '198.51.100.9');
    expect(moved.routing_history).toEqual({
      snapshots: 2,
      first_seen: '2026-10-01',
      origin_changes: [{ date: '2026-11-01', prefix: '198.51.100.0/24', origins: [64502], previous_prefix: '198.51.100.0/24', previous_origins: [64501] }],
      possible_hijack: false,
      hijack: null,
      data_as_of: '2026-11-01',
    });
    // A delegation of 768 addresses is no CIDR block: the block holding the address is named.
    expect(moved.network).toMatchObject({ cidr: '198.51.100.0/23', rir: 'lacnic', registrant_org: null, country: 'BR', status: 'assigned', allocated_at: '2009-09-09' });
    expect((await ask(provider, '198.51.102.1')).network.cidr).toBe('198.51.102.0/24');

    const cut = await ask(provider, '192.0.2.200');
    expect(cut.bgp).toMatchObject({ prefix: '192.0.2.0/24', announced: true, origins: [64666], upstreams: [] });
    expect(cut.asn).toMatchObject({ asn: 64666, name: 'MALLORY' });
    expect(cut.company).toEqual({ name: 'Mallory Transit', org_id: 'ORG-EVIL', country: 'RU', data_as_of: '2026-11-05' });
    expect(cut.network).toMatchObject({ cidr: '192.0.2.0/23', rir: 'ripencc', registrant_org: 'Beta Hosting GmbH' });
    expect(cut.routing_history).toMatchObject({
      origin_changes: [{ date: '2026-11-01', prefix: '192.0.2.0/24', origins: [64666], previous_prefix: '192.0.2.0/23', previous_origins: [64510] }],
      possible_hijack: true,
      hijack: { prefix: '192.0.2.0/24', new_origins: [64666], previous_origin: 64510, covering_prefix: '192.0.2.0/23', since: '2026-11-01' },
    });
    // The other half of the /23 is still 64510's alone.
    expect((await ask(provider, '192.0.3.1')).routing_history).toMatchObject({ origin_changes: [], possible_hijack: false });

    const second = await ask(provider, '2001:DB8:100:0::abcd');
    expect(second.ip).toBe('2001:db8:100::abcd');
    expect(second.bgp).toMatchObject({ prefix: '2001:db8:100::/48', origins: [64520, 64667] });
    expect(second.network).toMatchObject({ cidr: '2001:db8::/32', rir: 'apnic', registrant_org: 'Gamma KK', allocated_at: '2015-06-02', country: 'JP' });
    expect(second.routing_history).toMatchObject({
      possible_hijack: true,
      hijack: { prefix: '2001:db8:100::/48', new_origins: [64667], previous_origin: 64520, covering_prefix: '2001:db8:100::/48', since: '2026-11-01' },
    });

    expect((await ask(provider, '100.64.1.1')).asn).toMatchObject({ asn: 64530, origins: [64530, 64531], as_set: [64530, 64531] });
    const withdrawn = await ask(provider, '10.8.1.1');
    expect(withdrawn.bgp).toMatchObject({ prefix: null, announced: false, origins: [] });
    expect(withdrawn.routing_history).toMatchObject({
      first_seen: '2026-10-01',
      origin_changes: [{ date: '2026-11-01', prefix: null, origins: [], previous_prefix: '10.8.0.0/16', previous_origins: [65008] }],
      possible_hijack: false,
    });
    expect((await ask(provider, '10.7.255.255')).routing_history.origin_changes).toEqual([
      { date: '2026-11-01', prefix: '10.7.0.0/16', origins: [65999], previous_prefix: '10.7.0.0/16', previous_origins: [65007] },
    ]);
    expect((await ask(provider, '::ffff:10.9.0.1')).bgp.prefix).toBe('10.9.0.0/16');
    expect((await ask(provider, '2400:64:ffff::1')).bgp).toMatchObject({ prefix: '2400:64::/32', origins: [66099] });
    expect((await ask(provider, '2400:65::1')).bgp.announced).toBe(false);

    const nowhere = await ask(provider, '172.16.5.5');
    expect(nowhere.network).toEqual({ cidr: null, rir: null, registrant_org: null, allocated_at: null, country: null, status: null, data_as_of: '2026-11-01' });
    expect(nowhere.asn).toEqual({ asn: null, origins: [], as_set: null, name: null, country: null, data_as_of: '2026-11-01' });
    expect(nowhere.routing_history).toEqual({ snapshots: 2, first_seen: null, origin_changes: [], possible_hijack: false, hijack: null, data_as_of: '2026-11-01' });
  });

  it('reads the simple asn,name,country form too, and answers with nulls and no dates before anything is imported', async () => {
    const provider = new EmbeddedIpNetwork(store.ipNetwork);
    const empty = await ask(provider, '203.0.113.1');
    expect(empty.network.data_as_of).toBeNull();
    expect(empty.company).toEqual({ name: null, org_id: null, country: null, data_as_of: null });
    expect(empty.peering).toEqual({ peers: [], peer_count: 0, provider_count: 0, customer_count: 0, data_as_of: null });
    expect(await load(store, 'asnames', SIMPLE_ASNAMES_FILE, '2026-11-06')).toMatchObject({ imported: 3, invalid: 1, skipped: 1 });
    await load(store, 'pfx2as', PFX2AS_OCT, '2026-10-01');
    const named = await ask(provider, '203.0.113.1');
    expect(named.asn).toMatchObject({ asn: 64500, name: 'ACME-NET, Acme Networks', country: 'US' });
    expect(named.company).toEqual({ name: 'ACME-NET, Acme Networks', org_id: null, country: 'US', data_as_of: '2026-11-06' });
    const [bad] = await provider.lookup(['not-an-ip']);
    expect(bad).toMatchObject({ ok: false, retryable: false, code: 'invalid_ip' });
  });

  it("agrees with the store's own prefix index (GiST on PostgreSQL, fixed-width keys on SQLite) on every covering prefix", async () => {
    await load(store, 'pfx2as', PFX2AS_NOV, '2026-11-01');
    const [source] = await store.ipNetwork.sources();
    const provider = new EmbeddedIpNetwork(store.ipNetwork);
    for (const ip of ['192.0.2.1', '192.0.3.1', '2001:db8:100::1', '10.199.3.4', '2400:1::', '198.51.100.255', '8.8.8.8', '2400:65::1']) {
      const address = parseIp(ip)!;
      const rows = await store.ipNetwork.coveringPrefixes(source!.generation, address.family, address.key);
      const answer = await ask(provider, ip);
      expect(answer.bgp.origins.join('_')).toBe(rows[0]?.origins.replaceAll(',', '_') ?? '');
      expect(rows.map((r) => r.length)).toEqual([...rows.map((r) => r.length)].sort((a, b) => b - a));
    }
    const hijacked = parseIp('192.0.2.9')!;
    expect((await store.ipNetwork.coveringPrefixes(source!.generation, 4, hijacked.key)).map((r) => [r.length, r.origins])).toEqual([
      [24, '64666'],
      [23, '64510'],
    ]);
  });

  it('replaces a source atomically across processes: a peer sees the old data until the flip, and a killed import leaves nothing behind on the next run', async () => {
    await load(store, 'pfx2as', PFX2AS_OCT, '2026-10-01');
    const peer = await opened.openPeer();
    const peerProvider = new EmbeddedIpNetwork(peer.ipNetwork);
    expect((await ask(peerProvider, '198.51.100.1')).bgp.origins).toEqual([64501]);

    // An import that dies after writing part of the new snapshot under the same date.
    const generation = await store.ipNetwork.beginImport('pfx2as:2026-10-01', NOW);
    await store.ipNetwork.write(generation, 'prefixes', [{ family: 4, startKey: Buffer.from([198, 51, 100, 0]), length: 24, origins: '64777' }]);
    expect((await ask(peerProvider, '198.51.100.1')).bgp.origins).toEqual([64501]);
    expect((await store.ipNetwork.readPage(generation, 'prefixes', 0, 10)).rows).toHaveLength(1);

    // Run again from the start: the dead generation goes, the new one is whole, once.
    const again = await load(store, 'pfx2as', PFX2AS_NOV, '2026-10-01');
    expect(again.imported).toBe(305);
    expect((await store.ipNetwork.readPage(generation, 'prefixes', 0, 10)).rows).toEqual([]);
    const [current] = await store.ipNetwork.sources();
    expect(current).toMatchObject({ source: 'pfx2as:2026-10-01', rows: 305 });
    let stored = 0;
    for (let after: number | undefined = 0; after !== undefined; ) {
      const page: { rows: unknown[]; next: number | undefined } = await store.ipNetwork.readPage(current!.generation, 'prefixes', after, 100);
      stored += page.rows.length;
      after = page.next;
    }
    expect(stored).toBe(305);
    // The peer's next batch sees the new generation.
    expect((await ask(peerProvider, '198.51.100.1')).bgp.origins).toEqual([64502]);
    // And the generation it replaced is gone from the store.
    expect((await store.ipNetwork.readPage(current!.generation - 2, 'prefixes', 0, 10)).rows).toEqual([]);
  });
}, 60_000);
