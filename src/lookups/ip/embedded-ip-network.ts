import { keyToText, parseIp } from '../../shared/ip-keys.js';
import type { IpNetworkPort } from '../../storage/ip-network-records.js';
import type { LookupOutcome, LookupProvider } from '../lookup-provider.js';
import { answerIp, type IpNetworkResult, type PassiveDnsSection } from './ip-network-answer.js';
import type { IpNetworkData } from './ip-network-data.js';
import { IpNetworkIndex } from './ip-network-index.js';

/** Lookup kind of the IP network lookup: billing and the provider map use it. */
export const IP_NETWORK_KIND = 'ip_network';
/** Lookup kind a remote passive DNS service answers (the remote-provider protocol's path names it). */
export const PASSIVE_DNS_KIND = 'passive_dns';

/**
 * Answers from the imported registry, routing and AS data (IpNetworkIndex) and, when a passive DNS
 * service is configured, adds its section. Keys are canonical addresses (the `ip` pipeline's
 * normalisation). A passive DNS failure does not fail the lookup: its section says `unknown` and
 * why, and the network sections, which the lookup is billed for, stand.
 */
export class EmbeddedIpNetwork implements LookupProvider<IpNetworkResult> {
  readonly kind = IP_NETWORK_KIND;
  readonly name = 'embedded-ip-network';
  readonly maxBatch = 1_000;
  readonly answersLocally = true;
  private readonly index: IpNetworkIndex;

  constructor(
    port: IpNetworkPort,
    private readonly passiveDns?: LookupProvider | undefined,
    private readonly today: () => string = () => new Date().toISOString().slice(0, 10),
  ) {
    this.index = new IpNetworkIndex(port);
  }

  /** The loaded data, current as of this call: for other reports that read the same index (enrich's mail servers). */
  networkData(): Promise<IpNetworkData> {
    return this.index.current();
  }

  async lookup(keys: readonly string[], signal?: AbortSignal): Promise<LookupOutcome<IpNetworkResult>[]> {
    signal?.throwIfAborted();
    const data = await this.index.current();
    const answers = keys.map((key): LookupOutcome<IpNetworkResult> => {
      const address = parseIp(key);
      if (!address) return { ok: false, retryable: false, code: 'invalid_ip', message: 'not an IPv4 or IPv6 address' };
      return { ok: true, result: answerIp(data, address, keyToText(address.family, address.key)) };
    });
    if (!this.passiveDns) return answers;
    const wanted = answers.flatMap((a) => (a.ok ? [a.result.ip] : []));
    const dns: LookupOutcome<unknown>[] = [];
    for (let at = 0; at < wanted.length; at += this.passiveDns.maxBatch) dns.push(...(await this.passiveDns.lookup(wanted.slice(at, at + this.passiveDns.maxBatch), signal)));
    let n = 0;
    for (const a of answers) if (a.ok) a.result.passive_dns = this.section(dns[n++]);
    return answers;
  }

  private section(outcome: LookupOutcome<unknown> | undefined): PassiveDnsSection {
    if (!outcome || !outcome.ok) return { status: 'unknown', reason: outcome?.code ?? 'lookup_failed', records: null, data_as_of: null };
    const body = (outcome.result ?? {}) as { records?: unknown; data_as_of?: unknown };
    const records = Array.isArray(body.records) ? body.records : [];
    const asOf = typeof body.data_as_of === 'string' ? body.data_as_of : this.today();
    return { status: 'ok', records, data_as_of: asOf };
  }
}
