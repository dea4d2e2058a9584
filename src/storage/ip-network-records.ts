import type { IpFamily } from '../shared/ip-keys.js';

/**
 * The IP network data as the store keeps it: rows of one generation per source, and the sources'
 * current generations. Keys are fixed-width big-endian bytes (src/shared/ip-keys.ts).
 */

/** The four kinds of import; a pfx2as source is named per snapshot date (`pfx2as:2026-11-01`). */
export const IP_SOURCE_KINDS = { rir: 'rir', pfx2as: 'pfx2as', asnames: 'asnames', asrel: 'asrel' } as const;
export type IpSourceKind = (typeof IP_SOURCE_KINDS)[keyof typeof IP_SOURCE_KINDS];

export function pfx2asSource(date: string): string {
  return `${IP_SOURCE_KINDS.pfx2as}:${date}`;
}

export interface IpSourceRecord {
  source: string;
  generation: number;
  /** YYYY-MM-DD: the day the data describes. */
  dataAsOf: string;
  importedAt: number;
  rows: number;
}

export interface IpRangeRow {
  family: IpFamily;
  startKey: Buffer;
  endKey: Buffer;
  registry: string;
  cc: string | null;
  allocatedAt: string | null;
  status: string;
  opaqueId: string | null;
}

export interface RirAsnRow {
  firstAsn: number;
  count: number;
  registry: string;
  opaqueId: string;
}

export interface IpPrefixRow {
  family: IpFamily;
  /** Network key, host bits cleared. */
  startKey: Buffer;
  length: number;
  /** As RouteViews writes it: `13335`, `64500_64501` (several origins), `64500,64501` (an AS set). */
  origins: string;
}

export interface AsNameRow {
  asn: number;
  name: string;
  orgId: string | null;
  country: string | null;
}

export interface AsOrgRow {
  orgId: string;
  name: string;
  country: string | null;
}

/** CAIDA as-rel: -1 `a` is a provider of `b`; 0 `a` and `b` peer. */
export interface AsRelationshipRow {
  a: number;
  b: number;
  rel: -1 | 0;
}

/** What one generation holds, by table; each write names its table. */
export interface IpRowsByTable {
  ranges: IpRangeRow;
  rirAsns: RirAsnRow;
  prefixes: IpPrefixRow;
  asNames: AsNameRow;
  asOrgs: AsOrgRow;
  asRelationships: AsRelationshipRow;
}
export type IpTable = keyof IpRowsByTable;

/** A page of a generation's rows and where the next page starts (undefined: that was the last). */
export interface IpRowPage<T> {
  rows: T[];
  next: number | undefined;
}

/**
 * The IP network data. Imports are whole operations: `beginImport` (which also removes what a
 * killed import of the source left), `write` batches, `commitImport` (the flip, one transaction).
 * Readers list `sources()` and read a generation's rows page by page; rows of a generation never
 * change once it is current, and an older generation is deleted by the flip that replaces it, so a
 * reader that finds the same generations before and after reading has read one consistent state.
 */
export interface IpNetworkPort {
  beginImport(source: string, now: number): Promise<number>;
  write<T extends IpTable>(generation: number, table: T, rows: readonly IpRowsByTable[T][]): Promise<void>;
  commitImport(input: { source: string; generation: number; dataAsOf: string; rows: number; now: number }): Promise<void>;
  sources(): Promise<IpSourceRecord[]>;
  readPage<T extends IpTable>(generation: number, table: T, after: number, limit: number): Promise<IpRowPage<IpRowsByTable[T]>>;
  /** Every prefix of the generation that covers the address, longest first: the store's own index at work. */
  coveringPrefixes(generation: number, family: IpFamily, key: Buffer): Promise<IpPrefixRow[]>;
}
