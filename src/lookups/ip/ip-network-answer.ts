import { cidrText, FAMILY_BITS, keyToBigInt, type IpKey } from '../../shared/ip-keys.js';
import { prefixOrigins, prefixText, type IpNetworkData, type ParsedOrigins, type Snapshot } from './ip-network-data.js';
import { keyWords } from './range-table.js';

/** Longest lists an answer carries; the counts beside them say how many there are. */
const MAX_LISTED = 50;

export interface AsRef {
  asn: number;
  name: string | null;
}

export interface OriginChange {
  /** The snapshot that first showed the new origins. */
  date: string;
  prefix: string | null;
  origins: number[];
  previous_prefix: string | null;
  previous_origins: number[];
}

export interface PossibleHijack {
  /** The prefix that appeared with new origins (the same prefix, or a more specific one). */
  prefix: string;
  new_origins: number[];
  /** The origin seen before, still announcing `covering_prefix` in the latest snapshot. */
  previous_origin: number;
  covering_prefix: string;
  since: string;
}

/** The network sections of spec 4.5's IP lookup; `data_as_of` is the day each section's source describes (null: never imported). */
export interface IpNetworkResult {
  ip: string;
  network: { cidr: string | null; rir: string | null; registrant_org: string | null; allocated_at: string | null; country: string | null; status: string | null; data_as_of: string | null };
  asn: { asn: number | null; origins: number[]; as_set: number[] | null; name: string | null; country: string | null; data_as_of: string | null };
  company: { name: string | null; org_id: string | null; country: string | null; data_as_of: string | null };
  bgp: { prefix: string | null; announced: boolean; origins: number[]; upstreams: AsRef[]; upstreams_as_of: string | null; data_as_of: string | null };
  routing_history: { snapshots: number; first_seen: string | null; origin_changes: OriginChange[]; possible_hijack: boolean; hijack: PossibleHijack | null; data_as_of: string | null };
  peering: { peers: AsRef[]; peer_count: number; provider_count: number; customer_count: number; data_as_of: string | null };
  passive_dns?: PassiveDnsSection;
}

/** From the remote passive DNS provider, or what kept it from answering. */
export type PassiveDnsSection = { status: 'ok'; records: unknown[]; data_as_of: string } | { status: 'unknown'; reason: string; records: null; data_as_of: null };

interface Match {
  /** The most specific prefix's parsed origins. */
  parsed: ParsedOrigins;
  prefix: string;
  origins: number[];
  /** Every prefix of the snapshot covering the address, most specific first. */
  covering: { prefix: string; origins: number[] }[];
}

function matchIn(snapshot: Snapshot, address: IpKey, words: Uint32Array): Match | undefined {
  const prefixes = snapshot.byFamily[address.family];
  const found = prefixes.table.find(words);
  if (found < 0) return undefined;
  const covering = prefixes.table.chain(found).map((i) => ({ prefix: prefixText(prefixes, i), origins: prefixOrigins(prefixes, i).origins }));
  return { parsed: prefixOrigins(prefixes, found), prefix: covering[0]!.prefix, origins: covering[0]!.origins, covering };
}

const sameOrigins = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((x) => b.includes(x));

/** The answer for one address from loaded data; pure, so a bench measures the lookup itself. */
export function answerIp(data: IpNetworkData, address: IpKey, ipText: string): IpNetworkResult {
  const words = keyWords(address.key);
  const latest = data.snapshots[data.snapshots.length - 1];
  const match = latest ? matchIn(latest, address, words) : undefined;
  const parsed: ParsedOrigins = match ? match.parsed : { origins: [], asSet: null };
  const origin = parsed.origins[0];
  const ases = data.names?.ases;
  const asInfo = origin === undefined ? undefined : ases?.get(origin);
  const org = asInfo?.orgId ? data.names?.orgs.get(asInfo.orgId) : undefined;
  const ref = (asn: number): AsRef => ({ asn, name: ases?.get(asn)?.name ?? null });
  const neighbours = origin === undefined ? undefined : data.relationships?.neighbours.get(origin);
  const snapshotDate = latest?.date ?? null;
  return {
    ip: ipText,
    network: networkSection(data, address, words),
    asn: { asn: origin ?? null, origins: parsed.origins, as_set: parsed.asSet, name: asInfo?.name ?? null, country: asInfo?.country ?? org?.country ?? null, data_as_of: snapshotDate },
    company: {
      name: org?.name ?? asInfo?.name ?? null,
      org_id: asInfo?.orgId ?? null,
      country: org?.country ?? asInfo?.country ?? null,
      data_as_of: data.names?.dataAsOf ?? null,
    },
    bgp: {
      prefix: match?.prefix ?? null,
      announced: match !== undefined,
      origins: parsed.origins,
      upstreams: (neighbours?.providers ?? []).slice(0, MAX_LISTED).map(ref),
      upstreams_as_of: data.relationships?.dataAsOf ?? null,
      data_as_of: snapshotDate,
    },
    routing_history: history(data.snapshots, address, words),
    peering: {
      peers: (neighbours?.peers ?? []).slice(0, MAX_LISTED).map(ref),
      peer_count: neighbours?.peers.length ?? 0,
      provider_count: neighbours?.providers.length ?? 0,
      customer_count: neighbours?.customers.length ?? 0,
      data_as_of: data.relationships?.dataAsOf ?? null,
    },
  };
}

/**
 * The registry's delegation holding the address. `cidr` is the largest CIDR block inside the
 * delegation that holds the address (an IPv4 delegation counts addresses and need not be one
 * block). `registrant_org` is the holder's organisation: the delegated-extended files give each
 * holder one opaque id on its address blocks and its AS numbers alike, and the AS names import
 * names the organisation of those AS numbers. Null when the holder has no AS of a known name.
 */
function networkSection(data: IpNetworkData, address: IpKey, words: Uint32Array): IpNetworkResult['network'] {
  const empty = { cidr: null, rir: null, registrant_org: null, allocated_at: null, country: null, status: null, data_as_of: data.rir?.dataAsOf ?? null };
  if (!data.rir) return empty;
  const { entries, table } = data.rir.byFamily[address.family];
  const found = table.find(words);
  if (found < 0) return empty;
  const range = entries[found]!;
  const ip = keyToBigInt(address.key);
  const bits = FAMILY_BITS[address.family];
  let cidr: string | null = range.cidr;
  for (let length = 0; cidr === null && length <= bits; length++) {
    const host = BigInt(bits - length);
    const first = (ip >> host) << host;
    if (first >= range.first && first + (1n << host) - 1n <= range.last) {
      cidr = cidrText(address.family, first, length);
      break;
    }
  }
  let registrant: string | null = null;
  for (const asn of (range.opaqueId && data.rir.asnsByHolder.get(range.opaqueId)) || []) {
    const info = data.names?.ases.get(asn);
    if (!info) continue;
    registrant = (info.orgId ? data.names?.orgs.get(info.orgId)?.name : undefined) ?? info.name;
    break;
  }
  return { cidr, rir: range.registry, registrant_org: registrant, allocated_at: range.allocatedAt, country: range.cc, status: range.status, data_as_of: data.rir.dataAsOf };
}

/**
 * Origin changes of the address's most specific prefix from snapshot to snapshot, and whether the
 * latest change looks like a hijack: origins new since the last snapshot that differed, while an
 * origin of that earlier snapshot still announces the same prefix or one covering it (a second
 * origin for the prefix, or a more specific prefix of another origin cut out of the old one).
 */
function history(snapshots: readonly Snapshot[], address: IpKey, words: Uint32Array): IpNetworkResult['routing_history'] {
  const matches = snapshots.map((s) => matchIn(s, address, words));
  const changes: OriginChange[] = [];
  for (let i = 1; i < matches.length; i++) {
    const [before, now] = [matches[i - 1], matches[i]];
    if (before === undefined && now === undefined) continue;
    if (before !== undefined && now !== undefined && before.prefix === now.prefix && sameOrigins(before.origins, now.origins)) continue;
    if (before === undefined && changes.length === 0 && matches.slice(0, i).every((m) => m === undefined)) continue;
    changes.push({ date: snapshots[i]!.date, prefix: now?.prefix ?? null, origins: now?.origins ?? [], previous_prefix: before?.prefix ?? null, previous_origins: before?.origins ?? [] });
  }
  const firstSeen = matches.findIndex((m) => m !== undefined);
  return {
    snapshots: snapshots.length,
    first_seen: firstSeen < 0 ? null : snapshots[firstSeen]!.date,
    origin_changes: changes.slice(-MAX_LISTED),
    ...hijack(snapshots, matches),
    data_as_of: snapshots[snapshots.length - 1]?.date ?? null,
  };
}

function hijack(snapshots: readonly Snapshot[], matches: readonly (Match | undefined)[]): { possible_hijack: boolean; hijack: PossibleHijack | null } {
  const none = { possible_hijack: false, hijack: null };
  const latest = matches[matches.length - 1];
  if (latest === undefined) return none;
  let since = matches.length - 1;
  while (since > 0 && matches[since - 1] !== undefined && matches[since - 1]!.prefix === latest.prefix && sameOrigins(matches[since - 1]!.origins, latest.origins)) since--;
  const before = since > 0 ? matches[since - 1] : undefined;
  if (before === undefined) return none;
  const added = latest.origins.filter((o) => !before.origins.includes(o));
  if (added.length === 0) return none;
  for (const old of before.origins) {
    const still = latest.covering.find((c) => c.origins.includes(old));
    if (still) return { possible_hijack: true, hijack: { prefix: latest.prefix, new_origins: added, previous_origin: old, covering_prefix: still.prefix, since: snapshots[since]!.date } };
  }
  return none;
}
