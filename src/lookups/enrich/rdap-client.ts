import fs from 'node:fs';

export interface DomainInfo {
  registrar: string | null;
  created_at: string | null;
  expires_at: string | null;
  age_days: number | null;
  nameservers: string[];
  dnssec: boolean | null;
  /** ISO 3166-1 alpha-2 of the registrant's address, where the registry publishes it (many redact it). */
  registrant_country: string | null;
}

export interface RdapOptions {
  /** The IANA bootstrap file (https://data.iana.org/rdap/dns.json, RFC 9224): a URL or a file path. */
  bootstrap: string;
  /** GET a JSON document (the fetch of the remote-provider pattern: timeouts, address policy). */
  getJson: (url: string, signal?: AbortSignal) => Promise<unknown>;
  now: () => number;
}

type Bootstrap = { services: [string[], string[]][] };

/**
 * Registration data over RDAP (RFC 9082/9083): the bootstrap file maps a TLD to its registry's RDAP
 * base URL; `GET <base>domain/<name>` answers the events (registration, expiration), the registrar
 * entity, nameservers and secureDNS. The bootstrap is read once per process and kept.
 */
export class RdapClient {
  private bootstrap: Promise<Bootstrap> | undefined;

  constructor(private readonly options: RdapOptions) {}

  async lookup(domain: string, signal?: AbortSignal): Promise<DomainInfo | null> {
    const base = await this.baseFor(domain, signal);
    if (base === undefined) return null;
    const doc = (await this.options.getJson(`${base.replace(/\/?$/, '/')}domain/${domain}`, signal)) as RdapDomain | undefined;
    if (doc === undefined || doc === null || typeof doc !== 'object') return null;
    const event = (action: string) => doc.events?.find((e) => e.eventAction === action)?.eventDate ?? null;
    const created = event('registration');
    const createdMs = created === null ? NaN : Date.parse(created);
    const registrar = doc.entities?.find((e) => e.roles?.includes('registrar'));
    return {
      registrar: registrar ? vcardName(registrar) : null,
      created_at: created,
      expires_at: event('expiration'),
      age_days: Number.isNaN(createdMs) ? null : Math.floor((this.options.now() - createdMs) / 86_400_000),
      nameservers: (doc.nameservers ?? []).map((n) => (n.ldhName ?? '').toLowerCase()).filter((n) => n !== ''),
      dnssec: typeof doc.secureDNS?.delegationSigned === 'boolean' ? doc.secureDNS.delegationSigned : null,
      registrant_country: registrantCountry(doc.entities?.find((e) => e.roles?.includes('registrant'))),
    };
  }

  private async baseFor(domain: string, signal?: AbortSignal): Promise<string | undefined> {
    this.bootstrap ??= this.loadBootstrap(signal).catch((e: unknown) => {
      this.bootstrap = undefined; // try again on the next lookup
      throw e;
    });
    const { services } = await this.bootstrap;
    const labels = domain.split('.');
    // Longest matching suffix wins (the file lists TLDs; some registries list second-level zones).
    for (let i = 0; i < labels.length; i++) {
      const suffix = labels.slice(i).join('.');
      const service = services.find(([names]) => names.includes(suffix));
      if (service) return service[1].find((u) => u.startsWith('https:')) ?? service[1][0];
    }
    return undefined;
  }

  private async loadBootstrap(signal?: AbortSignal): Promise<Bootstrap> {
    const source = this.options.bootstrap;
    const doc = /^https?:/.test(source) ? await this.options.getJson(source, signal) : JSON.parse(fs.readFileSync(source, 'utf8'));
    if (!doc || !Array.isArray((doc as Bootstrap).services)) throw new Error('RDAP bootstrap file has no services');
    return doc as Bootstrap;
  }
}

interface RdapDomain {
  events?: { eventAction: string; eventDate: string }[];
  entities?: { roles?: string[]; vcardArray?: [string, [string, unknown, string, unknown][]] }[];
  nameservers?: { ldhName?: string }[];
  secureDNS?: { delegationSigned?: boolean };
}

function vcardName(entity: NonNullable<RdapDomain['entities']>[number]): string | null {
  const fn = entity.vcardArray?.[1]?.find((p) => p[0] === 'fn');
  return typeof fn?.[3] === 'string' ? fn[3] : null;
}

/** jCard `adr` (RFC 7095): the `cc` parameter (RFC 8605), else a two-letter last address element. */
function registrantCountry(entity: NonNullable<RdapDomain['entities']>[number] | undefined): string | null {
  const adr = entity?.vcardArray?.[1]?.find((p) => p[0] === 'adr');
  if (adr === undefined) return null;
  const cc = (adr[1] as { cc?: unknown } | undefined)?.cc;
  if (typeof cc === 'string' && /^[a-z]{2}$/i.test(cc)) return cc.toUpperCase();
  const parts = adr[3];
  const last = Array.isArray(parts) ? parts[parts.length - 1] : undefined;
  return typeof last === 'string' && /^[a-z]{2}$/i.test(last) ? last.toUpperCase() : null;
}
