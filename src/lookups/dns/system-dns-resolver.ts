import { Resolver } from 'node:dns/promises';
import { DNS_RCODES, type DnsAnswer, type DnsRcode, type DnsRecordType, type DnsResolver } from './dns-resolver.js';

/** c-ares gives no TTL for MX and TXT; answers of those types are kept this long. */
const DEFAULT_TTL_S = 300;

/**
 * The system's resolver (the servers of /etc/resolv.conf, through c-ares): the production default
 * when SLUICE_DNS_SERVERS is unset. c-ares reports DNS codes as error codes, mapped back here.
 */
export class SystemDnsResolver implements DnsResolver {
  private readonly resolver = new Resolver({ timeout: 2_000, tries: 2 });

  async query(name: string, type: DnsRecordType): Promise<DnsAnswer> {
    try {
      switch (type) {
        case 'A':
        case 'AAAA': {
          const rows = type === 'A' ? await this.resolver.resolve4(name, { ttl: true }) : await this.resolver.resolve6(name, { ttl: true });
          return withTtl(rows.map((r) => ({ type, value: r.address, ttl: r.ttl })));
        }
        case 'MX':
          return withTtl((await this.resolver.resolveMx(name)).map((r) => ({ type: 'MX' as const, preference: r.priority, exchange: r.exchange, ttl: DEFAULT_TTL_S })));
        case 'TXT':
          return withTtl((await this.resolver.resolveTxt(name)).map((r) => ({ type: 'TXT' as const, value: r.join(''), ttl: DEFAULT_TTL_S })));
        case 'NS':
          return withTtl((await this.resolver.resolveNs(name)).map((value) => ({ type, value, ttl: DEFAULT_TTL_S })));
        case 'CNAME':
          return withTtl((await this.resolver.resolveCname(name)).map((value) => ({ type, value, ttl: DEFAULT_TTL_S })));
        case 'CAA':
          return withTtl(
            (await this.resolver.resolveCaa(name)).flatMap((r) => {
              const tag = (['issue', 'issuewild', 'iodef'] as const).find((t) => typeof r[t] === 'string');
              return tag === undefined ? [] : [{ type: 'CAA' as const, flags: r.critical, tag, value: r[tag] as string, ttl: DEFAULT_TTL_S }];
            }),
          );
        case 'SOA': {
          const r = await this.resolver.resolveSoa(name);
          return withTtl([{ type: 'SOA', mname: r.nsname, rname: r.hostmaster, serial: r.serial, refresh: r.refresh, retry: r.retry, expire: r.expire, minimum: r.minttl, ttl: DEFAULT_TTL_S }]);
        }
      }
    } catch (e: unknown) {
      const rcode = rcodeOf((e as { code?: string }).code);
      return { rcode, records: [], ttl: rcode === DNS_RCODES.noError || rcode === DNS_RCODES.nxDomain ? DEFAULT_TTL_S : 0 };
    }
  }
}

function withTtl(records: DnsAnswer['records']): DnsAnswer {
  return { rcode: DNS_RCODES.noError, records, ttl: records.length > 0 ? Math.min(...records.map((r) => r.ttl)) : DEFAULT_TTL_S };
}

function rcodeOf(code: string | undefined): DnsRcode {
  switch (code) {
    case 'ENODATA':
      return DNS_RCODES.noError;
    case 'ENOTFOUND':
      return DNS_RCODES.nxDomain;
    case 'ESERVFAIL':
      return DNS_RCODES.servFail;
    case 'EREFUSED':
      return DNS_RCODES.refused;
    case 'ETIMEOUT':
    case 'ECONNREFUSED':
      return DNS_RCODES.timeout;
    default:
      return DNS_RCODES.other;
  }
}
