import { DNS_RCODES, type DnsResolver } from '../dns/dns-resolver.js';
import { checkSyntax } from '../validity/syntax.js';
import { flagsOf } from '../validity/flags.js';
import type { TlsEvidence } from '../validity/validity-result.js';
import { checkDmarc } from './dmarc-check.js';
import { dnsblListings } from './dnsbl.js';
import { type DnssecStatus } from './dnssec-probe.js';
import { gradeDomain } from './domain-grade.js';
import { gravatarHash, gravatarProfile } from './gravatar.js';
import type { GuardedGetOptions } from './guarded-get.js';
import { bimiRecord, mtaStsRecord, probeDkim, tlsRptRecord } from './mail-auth-records.js';
import type { MailServerNetworkLookup } from './mail-server-network.js';
import { fetchMtaStsPolicy } from './mta-sts-policy.js';
import type { DomainInfo, RdapClient } from './rdap-client.js';
import { checkSpf } from './spf-check.js';

export interface BreachSummary {
  count: number;
  exposed_data: string[];
  services: string[];
}

/** Everything enrichment talks to, passed in (src/main/open-enrich.ts builds the real ones). */
export interface EmailEnricherDeps {
  resolver: DnsResolver;
  dnssec: (domain: string) => Promise<DnssecStatus>;
  fetch: GuardedGetOptions;
  rdap?: RdapClient | undefined;
  gravatar?: { base: string; getJson: (url: string, signal?: AbortSignal) => Promise<unknown> } | undefined;
  dnsblZones: readonly string[];
  /** The email breach index, when one is imported or configured. */
  breaches?: ((email: string) => Promise<BreachSummary | null>) | undefined;
  /** The verifier's STARTTLS evidence for the address, when it was verified recently: host and TLS. */
  tlsEvidence?: ((email: string) => Promise<{ host: string; tls: TlsEvidence } | null>) | undefined;
  /** The mail servers' asn, org, country and hosting from imported IP network data; null: none imported. */
  ipNetwork?: MailServerNetworkLookup | undefined;
  now: () => number;
  /** Seconds a report is answered from the result cache; 0: never. */
  cacheSeconds: number;
}

export type EnrichAnswer = Record<string, unknown> & { email: string };

/**
 * The free enrich report (spec 4.3): every field best-effort. A part that fails (a DNS server down,
 * an RDAP registry away) leaves its field out or says why inside it; the rest is still answered.
 * Returns undefined for an input that is not an address.
 */
export async function enrichEmail(deps: EmailEnricherDeps, input: string, signal?: AbortSignal): Promise<EnrichAnswer | undefined> {
  const syntax = checkSyntax(input);
  if (!syntax.ok) return undefined;
  const { address, local, domain } = syntax;
  const r = deps.resolver;
  const flags = flagsOf(local, domain);
  const mxAnswer = await r.query(domain, 'MX', signal);
  const mx = mxAnswer.records.flatMap((x) => (x.type === 'MX' ? [x] : [])).sort((a, b) => a.preference - b.preference).map((x) => x.exchange.toLowerCase()).filter((h) => h !== '' && h !== '.');
  const servers = await Promise.all(mx.slice(0, 5).map(async (host) => ({ host, ip: firstA(await r.query(host, 'A', signal)) })));
  const firstIp = servers.find((s) => s.ip !== null)?.ip ?? null;

  const [spf, dmarc, dkim, mtaSts, tlsRpt, bimi, dnssec, mxTxt, rootTxt] = await Promise.all([
    checkSpf(r, domain, firstIp, signal),
    checkDmarc(r, domain, signal),
    probeDkim(r, domain, signal),
    mtaStsRecord(r, domain, signal),
    tlsRptRecord(r, domain, signal),
    bimiRecord(r, domain, signal),
    deps.dnssec(domain).catch((): DnssecStatus => 'unknown'),
    Promise.resolve(mxAnswer),
    r.query(domain, 'TXT', signal),
  ]);
  const policy = mtaSts.record !== null ? await fetchMtaStsPolicy(domain, deps.fetch, signal) : null;
  const grade = gradeDomain({ spf, dmarc, dkim, mtaSts: { record: mtaSts.record, policy }, tlsRpt: tlsRpt.record !== null, bimi: bimi.record !== null, dnssec });

  const domainTrust = {
    grade: grade.grade,
    score: grade.score,
    spf,
    dmarc,
    dmarc_policy: dmarc.policy,
    mta_sts: { record: mtaSts.record, id: mtaSts.tags.id ?? null, policy, error: mtaSts.error },
    tls_rpt: { record: tlsRpt.record, rua: (tlsRpt.tags.rua ?? '').split(',').map((u) => u.trim()).filter((u) => u !== ''), error: tlsRpt.error },
    dkim,
    bimi: { record: bimi.record, logo_url: bimi.tags.l || null, authority_url: bimi.tags.a || null, error: bimi.error },
    dnssec,
    records: {
      mx: mxTxt.records.flatMap((x) => (x.type === 'MX' ? [`${x.preference} ${x.exchange}`] : [])),
      txt: rootTxt.records.flatMap((x) => (x.type === 'TXT' ? [x.value] : [])),
      dmarc: dmarc.record === null ? [] : [dmarc.record],
      mta_sts: mtaSts.record === null ? [] : [mtaSts.record],
      tls_rpt: tlsRpt.record === null ? [] : [tlsRpt.record],
      bimi: bimi.record === null ? [] : [bimi.record],
      dkim: dkim.selectors.map((s) => `${s.selector}: ${s.record}`),
    },
  };

  const answer: EnrichAnswer = { email: address, canonical: syntax.canonical ?? address, free_provider: flags.free_provider, mx, domain_trust: domainTrust };

  const [info, a, evidence, breaches, gravatar] = await Promise.all([
    deps.rdap?.lookup(domain, signal).catch(() => null) ?? Promise.resolve(null),
    r.query(domain, 'A', signal),
    deps.tlsEvidence?.(address).catch(() => null) ?? Promise.resolve(null),
    deps.breaches?.(address).catch(() => null) ?? Promise.resolve(null),
    deps.gravatar ? gravatarProfile(deps.gravatar.base, gravatarHash(address), deps.gravatar.getJson, signal).catch(() => null) : Promise.resolve(null),
  ]);
  const addresses = a.records.flatMap((x) => (x.type === 'A' ? [x.value] : []));
  if (info !== null || addresses.length > 0) answer.domain_info = { ...(info ?? ({} as Partial<DomainInfo>)), a: addresses };

  answer.mail_servers = await Promise.all(
    servers.map(async ({ host, ip }) => {
      const server: Record<string, unknown> = { host, ip };
      if (ip !== null && deps.ipNetwork) {
        const network = await deps.ipNetwork(ip).catch(() => null);
        if (network !== null) Object.assign(server, network);
      }
      if (ip !== null && deps.dnsblZones.length > 0) {
        const listed = await dnsblListings(r, ip, deps.dnsblZones, signal);
        if (listed !== null) Object.assign(server, { blocklisted: listed.length > 0, blocklists: listed });
      }
      if (evidence !== null && evidence.host === host) {
        const expires = evidence.tls.valid_to === null ? NaN : Date.parse(evidence.tls.valid_to);
        Object.assign(server, {
          tls_issuer: evidence.tls.issuer,
          tls_expires_at: Number.isNaN(expires) ? null : new Date(expires).toISOString(),
          tls_days_left: Number.isNaN(expires) ? null : Math.floor((expires - deps.now()) / 86_400_000),
        });
      }
      return server;
    }),
  );

  const footprint: Record<string, unknown> = {};
  if (breaches !== null) footprint.breaches = breaches;
  if (gravatar !== null) Object.assign(footprint, { gravatar_url: gravatar.avatar_url, gravatar_profile: gravatar.profile });
  if (Object.keys(footprint).length > 0) answer.footprint = footprint;
  return answer;
}

function firstA(answer: { rcode: string; records: readonly { type: string; value?: string }[] }): string | null {
  if (answer.rcode !== DNS_RCODES.noError) return null;
  const a = answer.records.find((x) => x.type === 'A');
  return a?.value ?? null;
}
