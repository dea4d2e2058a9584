import { cidrText, FAMILY_BITS, keyToBigInt, type IpFamily } from '../../shared/ip-keys.js';
import type { AsNameRow, AsOrgRow, AsRelationshipRow, IpPrefixRow, IpRangeRow, RirAsnRow } from '../../storage/ip-network-records.js';
import { RangeTable } from './range-table.js';

/** One family's ranges, and the table that finds the innermost one. */
export interface FamilyTable<T> {
  entries: T[];
  table: RangeTable;
}

export interface RirRange {
  first: bigint;
  last: bigint;
  /** The range as one CIDR block, when it is one (every IPv6 delegation, most IPv4 ones); else null. */
  cidr: string | null;
  registry: string;
  cc: string | null;
  allocatedAt: string | null;
  status: string;
  opaqueId: string | null;
}

/**
 * One family's prefixes of a snapshot, compact: a million prefixes are typed arrays and one string
 * each (origins, interned), so that the garbage collector has a few large objects to walk rather
 * than millions of small ones. Texts and parsed origins are made when a lookup first needs them and
 * kept in bounded caches.
 */
export interface PrefixTable {
  family: IpFamily;
  count: number;
  /** Network keys, as big-endian 32-bit words: 1 per IPv4 prefix, 4 per IPv6 prefix. */
  starts: Uint32Array;
  lengths: Uint8Array;
  origins: string[];
  table: RangeTable;
  texts: Map<number, string>;
  parsed: Map<number, ParsedOrigins>;
}

export interface ParsedOrigins {
  origins: number[];
  asSet: number[] | null;
}

export interface Snapshot {
  date: string;
  byFamily: Record<IpFamily, PrefixTable>;
}

/** Most cached texts or parsed origins per table before the cache starts over. */
const CACHE_ENTRIES = 100_000;

export function parseOrigins(text: string): ParsedOrigins {
  const groups = text.split('_');
  const origins = [...new Set(groups.flatMap((g) => g.split(',').map(Number)))];
  const set = groups.find((g) => g.includes(','));
  return { origins, asSet: set === undefined ? null : set.split(',').map(Number) };
}

function cached<T>(cache: Map<number, T>, i: number, make: () => T): T {
  let value = cache.get(i);
  if (value === undefined) {
    if (cache.size >= CACHE_ENTRIES) cache.clear();
    cache.set(i, (value = make()));
  }
  return value;
}

function firstOf(t: Pick<PrefixTable, 'family' | 'starts'>, i: number): bigint {
  if (t.family === 4) return BigInt(t.starts[i]!);
  const at = i * 4;
  return (BigInt(t.starts[at]!) << 96n) | (BigInt(t.starts[at + 1]!) << 64n) | (BigInt(t.starts[at + 2]!) << 32n) | BigInt(t.starts[at + 3]!);
}

export function prefixText(t: PrefixTable, i: number): string {
  return cached(t.texts, i, () => cidrText(t.family, firstOf(t, i), t.lengths[i]!));
}

export function prefixOrigins(t: PrefixTable, i: number): ParsedOrigins {
  return cached(t.parsed, i, () => parseOrigins(t.origins[i]!));
}

/** A snapshot's prefixes, added as the store pages them in, then indexed once. */
export class SnapshotBuilder {
  private readonly words = { 4: [] as number[], 6: [] as number[] };
  private readonly lengths = { 4: [] as number[], 6: [] as number[] };
  private readonly origins = { 4: [] as string[], 6: [] as string[] };
  /** Most origin strings repeat (an AS announces many prefixes): one copy each. */
  private readonly interned = new Map<string, string>();

  add(rows: readonly IpPrefixRow[]): void {
    for (const r of rows) {
      const words = this.words[r.family];
      const key = r.startKey;
      for (let at = 0; at < key.length; at += 4) words.push(((key[at]! << 24) | (key[at + 1]! << 16) | (key[at + 2]! << 8) | key[at + 3]!) >>> 0);
      this.lengths[r.family].push(r.length);
      let origins = this.interned.get(r.origins);
      if (origins === undefined) this.interned.set(r.origins, (origins = r.origins));
      this.origins[r.family].push(origins);
    }
  }

  build(date: string): Snapshot {
    const table = (family: IpFamily): PrefixTable => {
      const starts = Uint32Array.from(this.words[family]);
      const lengths = Uint8Array.from(this.lengths[family]);
      const count = lengths.length;
      const bits = BigInt(FAMILY_BITS[family]);
      const shape = { family, starts };
      const ranges = RangeTable.build(family, count, (i) => firstOf(shape, i), (i) => firstOf(shape, i) + (1n << (bits - BigInt(lengths[i]!))) - 1n);
      return { family, count, starts, lengths, origins: this.origins[family], table: ranges, texts: new Map(), parsed: new Map() };
    };
    const snapshot = { date, byFamily: { 4: table(4), 6: table(6) } };
    this.words[4] = [];
    this.words[6] = [];
    return snapshot;
  }
}

export interface AsInfo {
  name: string;
  orgId: string | null;
  country: string | null;
}

export interface AsNeighbours {
  providers: number[];
  customers: number[];
  peers: number[];
}

/** Everything the lookups answer from, with each source's date; built from one consistent read. */
export interface IpNetworkData {
  /** `source:generation,...`: what was loaded, to tell whether the store has moved on. */
  signature: string;
  rir: { dataAsOf: string; byFamily: Record<IpFamily, FamilyTable<RirRange>>; asnsByHolder: Map<string, number[]> } | undefined;
  /** Oldest first. */
  snapshots: Snapshot[];
  names: { dataAsOf: string; ases: Map<number, AsInfo>; orgs: Map<string, { name: string; country: string | null }> } | undefined;
  relationships: { dataAsOf: string; neighbours: Map<number, AsNeighbours> } | undefined;
}

export function rirTables(rows: IpRangeRow[]): Record<IpFamily, FamilyTable<RirRange>> {
  const split = { 4: [] as RirRange[], 6: [] as RirRange[] };
  for (const r of rows) {
    const first = keyToBigInt(r.startKey);
    const last = keyToBigInt(r.endKey);
    split[r.family].push({ first, last, cidr: blockOf(r.family, first, last), registry: r.registry, cc: r.cc, allocatedAt: r.allocatedAt, status: r.status, opaqueId: r.opaqueId });
  }
  return {
    4: { entries: split[4], table: RangeTable.build(4, split[4].length, (i) => split[4][i]!.first, (i) => split[4][i]!.last) },
    6: { entries: split[6], table: RangeTable.build(6, split[6].length, (i) => split[6][i]!.first, (i) => split[6][i]!.last) },
  };
}

/** Each holder's AS numbers (from the same RIR files), expanded from their blocks, a few per holder at most. */
export function asnsByHolder(rows: RirAsnRow[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const r of rows) {
    const list = out.get(r.opaqueId) ?? [];
    // A holder's first few ASNs are all a lookup names; a block of thousands adds nothing.
    for (let n = 0; n < r.count && list.length < 16; n++) list.push(r.firstAsn + n);
    out.set(r.opaqueId, list);
  }
  return out;
}

export function asDirectory(names: AsNameRow[], orgs: AsOrgRow[]): { ases: Map<number, AsInfo>; orgs: Map<string, { name: string; country: string | null }> } {
  return {
    ases: new Map(names.map((n) => [n.asn, { name: n.name, orgId: n.orgId, country: n.country }])),
    orgs: new Map(orgs.map((o) => [o.orgId, { name: o.name, country: o.country }])),
  };
}

/** Each AS's providers, customers and peers; a peering line is stored once and counts for both sides. */
export function asNeighbours(rows: readonly AsRelationshipRow[], into: Map<number, AsNeighbours> = new Map()): Map<number, AsNeighbours> {
  const of = (asn: number) => {
    let n = into.get(asn);
    if (!n) into.set(asn, (n = { providers: [], customers: [], peers: [] }));
    return n;
  };
  for (const r of rows) {
    if (r.rel === -1) {
      of(r.a).customers.push(r.b);
      of(r.b).providers.push(r.a);
    } else {
      of(r.a).peers.push(r.b);
      of(r.b).peers.push(r.a);
    }
  }
  return into;
}

function blockOf(family: IpFamily, first: bigint, last: bigint): string | null {
  const size = last - first + 1n;
  if ((size & (size - 1n)) !== 0n || first % size !== 0n) return null;
  return cidrText(family, first, FAMILY_BITS[family] - (size.toString(2).length - 1));
}
