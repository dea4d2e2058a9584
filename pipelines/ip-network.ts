import { IP_NETWORK_KIND } from '../src/lookups/ip/embedded-ip-network.js';
import type { IpNetworkResult } from '../src/lookups/ip/ip-network-answer.js';
import { ERROR_CODES } from '../src/shared/errors.js';
import { keyToText, parseIp } from '../src/shared/ip-keys.js';
import type { NormaliseResult, Pipeline } from './pipeline.js';

/** Lists in one cell (origins, upstreams) are joined with this, as the email pipelines join theirs. */
export const IP_LIST_SEPARATOR = ';';

/** Other names of an address column, as firewall, proxy and web server exports write them. */
export const IP_ALIASES: readonly (readonly string[])[] = [
  ['ip address', 'ip addr', 'ipaddress', 'ip_address', 'address'],
  // Not `host`: a host column holds names more often than addresses, and the domain report reads it.
  ['ipv4', 'ipv6', 'client ip', 'source ip', 'src ip', 'remote addr', 'remote ip'],
];

/**
 * One IPv4 or IPv6 address in its canonical form (dotted quad; RFC 5952 for IPv6; an IPv4-mapped
 * IPv6 address as its IPv4 address), so that `2001:DB8::1` and `2001:db8:0::1` are one key, billed once.
 */
export function normaliseIp(raw: string): NormaliseResult {
  const trimmed = raw.trim();
  if (trimmed === '') return { ok: false, code: ERROR_CODES.emptyValue, message: 'the ip cell is empty' };
  const address = parseIp(trimmed);
  if (!address) return { ok: false, code: ERROR_CODES.invalidIp, message: 'not an IPv4 or IPv6 address (one address, without a prefix length or port)' };
  return { ok: true, key: keyToText(address.family, address.key) };
}

const cell = (value: string | number | null | undefined) => (value === null || value === undefined ? '' : String(value));

/**
 * Job type `ip`: one address per row, answered from the imported registry and routing data. The
 * cells carry what a monitor compares between runs (origin, prefix, registrant, hijack) and the
 * age of the routing data they came from.
 */
export const ipNetworkPipeline: Pipeline<IpNetworkResult> = {
  type: 'ip',
  lookupKind: IP_NETWORK_KIND,
  keyHeader: 'ip',
  keyAliases: IP_ALIASES,
  headerless: true,
  normalise: normaliseIp,
  resultColumns: [
    'network_cidr',
    'rir',
    'registrant_org',
    'allocated_at',
    'country',
    'origin_asn',
    'as_name',
    'company',
    'bgp_prefix',
    'announced',
    'upstreams',
    'origin_changes',
    'possible_hijack',
    'hijack_origins',
    'routing_as_of',
  ],
  resultCells(r: IpNetworkResult): string[] {
    return [
      cell(r.network.cidr),
      cell(r.network.rir),
      cell(r.network.registrant_org),
      cell(r.network.allocated_at),
      cell(r.network.country),
      r.bgp.origins.join(IP_LIST_SEPARATOR),
      cell(r.asn.name),
      cell(r.company.name),
      cell(r.bgp.prefix),
      String(r.bgp.announced),
      r.bgp.upstreams.map((u) => u.asn).join(IP_LIST_SEPARATOR),
      String(r.routing_history.origin_changes.length),
      String(r.routing_history.possible_hijack),
      (r.routing_history.hijack?.new_origins ?? []).join(IP_LIST_SEPARATOR),
      cell(r.bgp.data_as_of),
    ];
  },
  isFound(r: IpNetworkResult): boolean {
    return r.network.cidr !== null || r.bgp.announced;
  },
};
