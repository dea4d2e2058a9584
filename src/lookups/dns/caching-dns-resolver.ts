import type { Clock } from '../../shared/clock.js';
import { isFinalAnswer, type DnsAnswer, type DnsRecordType, type DnsResolver } from './dns-resolver.js';

export interface CachingDnsResolverOptions {
  /** Entries kept at most; the oldest goes first, so memory stays flat over a million domains. */
  maxEntries?: number;
  /** A TTL longer than this is cut to it (a record changed upstream is seen within the hour). */
  maxTtlS?: number;
}

/**
 * Keeps answers that say something about a name (NOERROR, NXDOMAIN) for their TTL; failures
 * (SERVFAIL, time-outs) are never kept, so the next query asks again. Concurrent queries for one
 * name share one request: a batch of 1,000 addresses at one domain asks once, not 1,000 times.
 */
export class CachingDnsResolver implements DnsResolver {
  private readonly entries = new Map<string, { answer: DnsAnswer; until: number }>();
  private readonly inFlight = new Map<string, Promise<DnsAnswer>>();
  private readonly maxEntries: number;
  private readonly maxTtlS: number;

  constructor(
    private readonly inner: DnsResolver,
    private readonly clock: Clock,
    options: CachingDnsResolverOptions = {},
  ) {
    this.maxEntries = options.maxEntries ?? 50_000;
    this.maxTtlS = options.maxTtlS ?? 3_600;
  }

  query(name: string, type: DnsRecordType, signal?: AbortSignal): Promise<DnsAnswer> {
    const key = `${type} ${name.toLowerCase()}`;
    const hit = this.entries.get(key);
    if (hit && hit.until > this.clock.now()) return Promise.resolve(hit.answer);
    if (hit) this.entries.delete(key);
    const pending = this.inFlight.get(key);
    if (pending) return pending;
    const asked = this.inner.query(name, type, signal).then((answer) => {
      this.inFlight.delete(key);
      if (isFinalAnswer(answer) && answer.ttl > 0) this.remember(key, answer);
      return answer;
    });
    this.inFlight.set(key, asked);
    return asked;
  }

  private remember(key: string, answer: DnsAnswer): void {
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { answer, until: this.clock.now() + Math.min(answer.ttl, this.maxTtlS) * 1000 });
  }
}
