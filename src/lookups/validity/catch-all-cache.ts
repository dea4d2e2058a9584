import type { Clock } from '../../shared/clock.js';

/** A day: catch-all is a server's configuration, which changes seldom; one probe a day per domain. */
export const CATCH_ALL_WINDOW_MS = 86_400_000;

/** The kind under which catch-all answers sit in the store's result cache, keyed by domain. */
export const CATCH_ALL_KIND = 'validity.catch_all';

/** The store's result cache, as far as the catch-all answers need it (ResultCachePort). */
export interface SharedAnswers {
  getMany<R>(kind: string, keys: readonly string[], since: number): Promise<Map<string, R>>;
  put(kind: string, key: string, result: unknown, now: number): Promise<void>;
}

interface StoredAnswer {
  catch_all: boolean;
  at: number;
}

/**
 * Whether a domain accepts every recipient, probed once per domain per window by an RCPT TO of a
 * random local part. Only a definite answer is kept (250: catch-all; 5.1.x: not): a 4xx or a
 * lost connection says nothing, and the next session probes again. Bounded, oldest out first.
 * With `shared`, answers also go to the store's result cache and are read from it, so that every
 * process and machine on the store probes a domain once per window between them, not once each.
 */
export class CatchAllCache {
  private readonly entries = new Map<string, { catchAll: boolean; until: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly windowMs = CATCH_ALL_WINDOW_MS,
    private readonly maxEntries = 100_000,
    private readonly shared?: SharedAnswers,
  ) {}

  get(domain: string): boolean | undefined {
    const entry = this.entries.get(domain);
    if (entry === undefined) return undefined;
    if (entry.until > this.clock.now()) return entry.catchAll;
    this.entries.delete(domain);
    return undefined;
  }

  /** Reads the store's answers for the domains this process does not know: one read a batch. */
  async load(domains: readonly string[]): Promise<void> {
    if (!this.shared) return;
    const unknown = domains.filter((d) => this.get(d) === undefined);
    if (unknown.length === 0) return;
    const now = this.clock.now();
    const stored = await this.shared.getMany<StoredAnswer>(CATCH_ALL_KIND, unknown, now - this.windowMs);
    for (const [domain, answer] of stored) this.remember(domain, answer.catch_all, answer.at + this.windowMs);
  }

  set(domain: string, catchAll: boolean): void {
    const now = this.clock.now();
    this.remember(domain, catchAll, now + this.windowMs);
    // Not awaited: the answer is already this process's; a write that fails costs another process
    // one probe of its own, which is what it would cost without the store.
    void this.shared?.put(CATCH_ALL_KIND, domain, { catch_all: catchAll, at: now } satisfies StoredAnswer, now).catch(() => undefined);
  }

  private remember(domain: string, catchAll: boolean, until: number): void {
    if (this.entries.size >= this.maxEntries && !this.entries.has(domain)) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(domain, { catchAll, until });
  }
}
