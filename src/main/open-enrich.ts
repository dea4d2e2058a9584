import type { Engine } from '../jobs/engine.js';
import { dnssecProbeFor } from '../lookups/enrich/dnssec-probe.js';
import type { BreachSummary, EmailEnricherDeps } from '../lookups/enrich/email-enricher.js';
import { mailServerNetwork } from '../lookups/enrich/mail-server-network.js';
import { EmbeddedIpNetwork, IP_NETWORK_KIND } from '../lookups/ip/embedded-ip-network.js';
import type { EmailBreachResult } from '../lookups/email/embedded-email-breach-index.js';
import { EMAIL_BREACHES_KIND } from '../storage/directory-rules.js';
import { VALIDITY_KIND, type ValidityResult } from '../lookups/validity/validity-result.js';
import { openEnrichWeb } from './open-enrich-web.js';

const DAY_MS = 86_400_000;

/**
 * The enrich report's real parts: the shared DNS layer as configured, HTTPS under the webhook
 * address policy, RDAP through the IANA bootstrap, Gravatar when configured, the email breach
 * index and the verifier's cached STARTTLS evidence from the engine.
 */
export function openEnricher(engine: Engine): EmailEnricherDeps {
  const { config, deps } = engine;
  const e = config.enrich;
  const { resolver, fetch, getJson, rdap } = openEnrichWeb(config, deps.clock);
  const breachProvider = deps.providers.get(EMAIL_BREACHES_KIND);
  // The IP network lookup's own in-memory index (not its provider's lookup, which would also ask passive DNS).
  const ipProvider = deps.providers.get(IP_NETWORK_KIND);
  return {
    resolver,
    dnssec: dnssecProbeFor(config.validity.dnsServers, Math.min(e.timeoutMs, 2_000)),
    fetch,
    rdap,
    gravatar: e.gravatarUrl === undefined ? undefined : { base: e.gravatarUrl, getJson },
    dnsblZones: e.dnsblZones,
    breaches:
      breachProvider === undefined
        ? undefined
        : async (email): Promise<BreachSummary | null> => {
            const [outcome] = await breachProvider.lookup([email]);
            if (!outcome?.ok) return null;
            const info = (outcome.result as EmailBreachResult).breach_info;
            return { count: info.count, exposed_data: info.exposed_data, services: info.services };
          },
    tlsEvidence: async (email) => {
      const since = deps.clock.now() - deps.repeatFreeDays * DAY_MS;
      const result = (await deps.results.getMany<ValidityResult>(VALIDITY_KIND, [email], since)).get(email);
      return result?.smtp?.tls ? { host: result.smtp.host, tls: result.smtp.tls } : null;
    },
    ipNetwork: ipProvider instanceof EmbeddedIpNetwork ? async (ip) => mailServerNetwork(await ipProvider.networkData(), ip) : undefined,
    now: () => deps.clock.now(),
    cacheSeconds: e.cacheSeconds,
  };
}
