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

/** One dated pfx2as snapshot, compact: a million prefixes are typed arrays and one string each. */
export interface PrefixEntry {
  first: bigint;
  length: number;
  origins: string;
  /** Filled in by the first lookup that needs them, so a hot prefix is parsed and printed once. */
  text?: string;
  parsed?: { origins: number[]; asSet: number[] | null };
}

export interface Snapshot {
  date: string;
  byFamily: Record<IpFamily, FamilyTable<PrefixEntry>>;
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

/** A snapshot's prefixes, added family by family as the store pages them in, then indexed once. */
export class SnapshotBuilder {
  private readonly split = { 4: [] as PrefixEntry[], 6: [] as PrefixEntry[] };

  add(rows: readonly IpPrefixRow[]): void {
    for (const r of rows) this.split[r.family].push({ first: keyToBigInt(r.startKey), length: r.length, origins: r.origins });
  }

  build(date: string): Snapshot {
    const table = (family: IpFamily) => {
      const entries = this.split[family];
      const bits = BigInt(family === 4 ? 32 : 128);
      return {
        entries,
        table: RangeTable.build(family, entries.length, (i) => entries[i]!.first, (i) => entries[i]!.first + (1n << (bits - BigInt(entries[i]!.length))) - 1n),
      };
    };
    return { date, byFamily: { 4: table(4), 6: table(6) } };
  }
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
