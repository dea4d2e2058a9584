import fs from 'node:fs';
import type { Engine } from '../jobs/engine.js';
import { withBreakers } from '../lookups/enrich/breaker-json.js';
import { dnssecProbeFor } from '../lookups/enrich/dnssec-probe.js';
import type { BreachSummary, EmailEnricherDeps } from '../lookups/enrich/email-enricher.js';
import { guardedGet, type GuardedGetOptions } from '../lookups/enrich/guarded-get.js';
import { mailServerNetwork } from '../lookups/enrich/mail-server-network.js';
import { RdapClient } from '../lookups/enrich/rdap-client.js';
import { EmbeddedIpNetwork, IP_NETWORK_KIND } from '../lookups/ip/embedded-ip-network.js';
import type { EmailBreachResult } from '../lookups/email/embedded-email-breach-index.js';
import { EMAIL_BREACHES_KIND } from '../storage/directory-rules.js';
import { VALIDITY_KIND, type ValidityResult } from '../lookups/validity/validity-result.js';
import { blockedReason } from '../webhooks/address-policy.js';
import { openDnsResolver } from './open-validity.js';

const DAY_MS = 86_400_000;
/** RFC 9224's bootstrap registry for domain names, as IANA publishes it. */
const IANA_RDAP_BOOTSTRAP = 'https://data.iana.org/rdap/dns.json';

/**
 * The enrich report's real parts: the shared DNS layer as configured, HTTPS under the webhook
 * address policy, RDAP through the IANA bootstrap, Gravatar when configured, the email breach
 * index and the verifier's cached STARTTLS evidence from the engine.
 */
export function openEnricher(engine: Engine): EmailEnricherDeps {
  const { config, deps } = engine;
  const e = config.enrich;
  const resolver = openDnsResolver(config, deps.clock);
  const fetch: GuardedGetOptions = {
    resolver,
    blockedReason,
    allowPrivate: e.allowPrivate,
    ca: e.caFile === undefined ? undefined : fs.readFileSync(e.caFile, 'utf8'),
    timeoutMs: e.timeoutMs,
    maxBytes: 1_000_000,
    httpsPort: e.httpsPort,
  };
  // RDAP and Gravatar name their own ports in their URLs: only MTA-STS gets the test port.
  const plain: GuardedGetOptions = { ...fetch, httpsPort: undefined };
  const getJson = withBreakers(async (url: string, signal?: AbortSignal): Promise<unknown> => {
    const got = await guardedGet(url, plain, signal);
    if (!got.ok) throw new Error(got.error);
    if (got.status === 404) return undefined;
    if (got.status !== 200) throw new Error(`http_${got.status}`);
    return JSON.parse(got.body) as unknown;
  }, { clock: deps.clock });
  const breachProvider = deps.providers.get(EMAIL_BREACHES_KIND);
  // The IP network lookup's own in-memory index (not its provider's lookup, which would also ask passive DNS).
  const ipProvider = deps.providers.get(IP_NETWORK_KIND);
  return {
    resolver,
    dnssec: dnssecProbeFor(config.validity.dnsServers, Math.min(e.timeoutMs, 2_000)),
    fetch,
    rdap: new RdapClient({ bootstrap: e.rdapBootstrap ?? IANA_RDAP_BOOTSTRAP, getJson, now: () => deps.clock.now() }),
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
