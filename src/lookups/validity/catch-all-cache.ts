import type { Clock } from '../../shared/clock.js';

/** A day: catch-all is a server's configuration, which changes seldom; one probe a day per domain. */
export const CATCH_ALL_WINDOW_MS = 86_400_000;

/**
 * Whether a domain accepts every recipient, probed once per domain per window by an RCPT TO of a
 * random local part. Only a definite answer is kept (250: catch-all; 5.1.x: not): a 4xx or a
 * lost connection says nothing, and the next session probes again. Bounded, oldest out first.
 */
export class CatchAllCache {
  private readonly entries = new Map<string, { catchAll: boolean; until: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly windowMs = CATCH_ALL_WINDOW_MS,
    private readonly maxEntries = 100_000,
  ) {}

  get(domain: string): boolean | undefined {
    const entry = this.entries.get(domain);
    if (entry === undefined) return undefined;
    if (entry.until > this.clock.now()) return entry.catchAll;
    this.entries.delete(domain);
    return undefined;
  }

  set(domain: string, catchAll: boolean): void {
    if (this.entries.size >= this.maxEntries && !this.entries.has(domain)) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(domain, { catchAll, until: this.clock.now() + this.windowMs });
  }
}
