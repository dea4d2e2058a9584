import fs from 'node:fs';
import type { Config } from '../config/load-config.js';
import type { CompanyResult } from '../lookups/company/company-profile.js';
import { CT_SUBDOMAINS_KIND } from '../lookups/domain/ct-subdomains.js';
import { DomainReportProvider } from '../lookups/domain/domain-report.js';
import { withBreakers } from '../lookups/enrich/breaker-json.js';
import { guardedGet, type GuardedGetOptions } from '../lookups/enrich/guarded-get.js';
import { RdapClient } from '../lookups/enrich/rdap-client.js';
import type { LookupProvider } from '../lookups/lookup-provider.js';
import { CircuitBreaker } from '../lookups/remote/circuit-breaker.js';
import { RemoteLookupProvider } from '../lookups/remote/remote-provider.js';
import type { Clock } from '../shared/clock.js';
import type { Store } from '../storage/store.js';
import { blockedReason } from '../webhooks/address-policy.js';
import { openDnsResolver } from './open-validity.js';

/** RFC 9224's bootstrap registry for domain names, as IANA publishes it (the enrich report's too). */
const IANA_RDAP_BOOTSTRAP = 'https://data.iana.org/rdap/dns.json';

/**
 * The domain report's real parts, the enrich report's settings reused: the shared DNS layer as
 * configured, HTTPS under the webhook address policy (SLUICE_ENRICH_ALLOW_PRIVATE, _CA_FILE,
 * _HTTPS_PORT for tests), RDAP through the IANA bootstrap, the company directory by domain, and the
 * certificate-transparency service when SLUICE_CT_URL is set.
 */
export function openDomainReport(config: Config, clock: Clock, store: Store, company: LookupProvider | undefined): { provider: DomainReportProvider; remotes: RemoteLookupProvider[] } {
  const e = config.enrich;
  const resolver = openDnsResolver(config, clock);
  const fetch: GuardedGetOptions = {
    resolver,
    blockedReason,
    allowPrivate: e.allowPrivate,
    ca: e.caFile === undefined ? undefined : fs.readFileSync(e.caFile, 'utf8'),
    timeoutMs: e.timeoutMs,
    maxBytes: 1_000_000,
    httpsPort: e.httpsPort,
  };
  const plain: GuardedGetOptions = { ...fetch, httpsPort: undefined };
  const getJson = withBreakers(async (url: string, signal?: AbortSignal): Promise<unknown> => {
    const got = await guardedGet(url, plain, signal);
    if (!got.ok) throw new Error(got.error);
    if (got.status === 404) return undefined;
    if (got.status !== 200) throw new Error(`http_${got.status}`);
    return JSON.parse(got.body) as unknown;
  }, { clock });
  const remotes: RemoteLookupProvider[] = [];
  const { url, auth } = config.ctSubdomains;
  let ct: RemoteLookupProvider | undefined;
  if (url !== undefined) {
    ct = new RemoteLookupProvider({
      kind: CT_SUBDOMAINS_KIND,
      baseUrl: url,
      ...(auth ? { authHeader: auth } : {}),
      timeoutMs: config.providers.timeoutMs,
      connections: config.providers.connections,
      maxBatch: config.providers.maxBatch,
      breaker: new CircuitBreaker({ records: store.limits, name: `${CT_SUBDOMAINS_KIND} ${new URL(url).origin}` }),
    });
    remotes.push(ct);
  }
  const provider = new DomainReportProvider({
    resolver,
    fetch,
    rdap: new RdapClient({ bootstrap: e.rdapBootstrap ?? IANA_RDAP_BOOTSTRAP, getJson, now: () => clock.now() }),
    ct,
    // The directory's best match for the domain or a parent of it (`domain:` keys match by domain only).
    company: company && (async (domain, signal) => {
      const [outcome] = await company.lookup([`domain:${domain}`], signal);
      return outcome?.ok ? ((outcome.result as CompanyResult).results[0] ?? null) : null;
    }),
    now: () => clock.now(),
  });
  return { provider, remotes };
}
