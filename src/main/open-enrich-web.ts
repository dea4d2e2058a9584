import fs from 'node:fs';
import type { Config } from '../config/load-config.js';
import type { DnsResolver } from '../lookups/dns/dns-resolver.js';
import { withBreakers, type GetJson } from '../lookups/enrich/breaker-json.js';
import { guardedGet, type GuardedGetOptions } from '../lookups/enrich/guarded-get.js';
import { RdapClient } from '../lookups/enrich/rdap-client.js';
import type { Clock } from '../shared/clock.js';
import { blockedReason } from '../webhooks/address-policy.js';
import { openDnsResolver } from './open-validity.js';

/** RFC 9224's bootstrap registry for domain names, as IANA publishes it. */
const IANA_RDAP_BOOTSTRAP = 'https://data.iana.org/rdap/dns.json';

/** What the enrich report and the domain report both read the web with. */
export interface EnrichWeb {
  resolver: DnsResolver;
  /** HTTPS gets for MTA-STS and discovery files: the test port (SLUICE_ENRICH_HTTPS_PORT) applies. */
  fetch: GuardedGetOptions;
  /** JSON APIs that name their own ports in their URLs (RDAP, Gravatar), each origin behind a breaker. */
  getJson: GetJson;
  rdap: RdapClient;
}

/**
 * The enrich settings made into clients: the shared DNS layer as configured, HTTPS under the webhook
 * address policy (SLUICE_ENRICH_ALLOW_PRIVATE, _CA_FILE, _HTTPS_PORT for tests) and RDAP through
 * the IANA bootstrap unless SLUICE_RDAP_BOOTSTRAP names another.
 */
export function openEnrichWeb(config: Config, clock: Clock): EnrichWeb {
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
  // RDAP and Gravatar name their own ports in their URLs: only MTA-STS gets the test port.
  const plain: GuardedGetOptions = { ...fetch, httpsPort: undefined };
  const getJson = withBreakers(async (url: string, signal?: AbortSignal): Promise<unknown> => {
    const got = await guardedGet(url, plain, signal);
    if (!got.ok) throw new Error(got.error);
    if (got.status === 404) return undefined;
    if (got.status !== 200) throw new Error(`http_${got.status}`);
    return JSON.parse(got.body) as unknown;
  }, { clock });
  const rdap = new RdapClient({ bootstrap: e.rdapBootstrap ?? IANA_RDAP_BOOTSTRAP, getJson, now: () => clock.now() });
  return { resolver, fetch, getJson, rdap };
}
