import type { Config } from '../config/load-config.js';
import type { CompanyResult } from '../lookups/company/company-profile.js';
import { CT_SUBDOMAINS_KIND } from '../lookups/domain/ct-subdomains.js';
import { DomainReportProvider } from '../lookups/domain/domain-report.js';
import type { LookupProvider } from '../lookups/lookup-provider.js';
import { CircuitBreaker } from '../lookups/remote/circuit-breaker.js';
import { RemoteLookupProvider } from '../lookups/remote/remote-provider.js';
import type { Clock } from '../shared/clock.js';
import type { Store } from '../storage/store.js';
import { openEnrichWeb } from './open-enrich-web.js';

/**
 * The domain report's real parts, the enrich report's settings reused: the shared DNS layer as
 * configured, HTTPS under the webhook address policy (SLUICE_ENRICH_ALLOW_PRIVATE, _CA_FILE,
 * _HTTPS_PORT for tests), RDAP through the IANA bootstrap, the company directory by domain, and the
 * certificate-transparency service when SLUICE_CT_URL is set.
 */
export function openDomainReport(config: Config, clock: Clock, store: Store, company: LookupProvider | undefined): { provider: DomainReportProvider; remotes: RemoteLookupProvider[] } {
  const { resolver, fetch, rdap } = openEnrichWeb(config, clock);
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
    rdap,
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
